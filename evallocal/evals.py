"""`run_evals`: run a target on each item (or use its recorded output) and score it."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping, Sequence

from .errors import InputError
from .runner import run_scorers
from .scorers.base import ScoreItem, Scorer
from .types import ScoreResult


def _call_target(target: Any, input: Any) -> Any:
    """Call a plain callable, an async callable, or an agent object with `.generate(input)`."""
    call = target.generate if hasattr(target, "generate") and not callable(target) else target
    result = call(input)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return result


async def _await(awaitable):
    return await awaitable


def _item_field(item: Any, index: int, name: str, required: bool) -> Any:
    if not isinstance(item, Mapping):
        raise InputError(f"data[{index}] is a {type(item).__name__}; each item must be a dict with an 'input' key")
    if required and name not in item:
        raise InputError(f"data[{index}] has no {name!r} key; add it (keys present: {sorted(item)})")
    return item.get(name)


def mean_scores(results: Iterable[ScoreResult]) -> float | None:
    """Mean over scorable results; None when no result could be scored."""
    scores = [r.score for r in results if r.score is not None]
    return sum(scores) / len(scores) if scores else None


def run_evals(data: Sequence[Mapping], scorers: Sequence[Scorer], target: Callable | None = None,
              on_item_complete: Callable[[dict], Any] | None = None, concurrency: int = 1) -> dict:
    """Score every item of `data` with every scorer.

    With `target`, each item's `input` is sent to it and its return value is scored; with
    `target=None`, the item's own recorded `output` is scored. Returns
    `{"scores": {scorer_id: mean}, "summary": {"totalItems": n, "notScorable": {...}}}`.
    A target failure or a scorer failure on one item makes that item not scorable (score None,
    with the error) without touching the others.
    """
    data = list(data)
    if not data:
        raise InputError("run_evals needs at least one item in `data`")
    if not scorers:
        raise InputError("run_evals needs at least one scorer")
    inputs = [_item_field(item, i, "input", required=True) for i, item in enumerate(data)]

    if target is None:
        outputs = [_item_field(item, i, "output", required=True) for i, item in enumerate(data)]
        target_errors = [None] * len(data)
    else:
        outputs, target_errors = _run_target(target, inputs, max(1, concurrency))

    items = [
        ScoreItem(input=inputs[i], output=outputs[i], ground_truth=item.get("ground_truth", item.get("groundTruth")),
                  request_context=item.get("request_context", item.get("requestContext")))
        for i, item in enumerate(data)
    ]
    results = run_scorers(items, scorers)
    for i, error in enumerate(target_errors):
        if error is not None:
            results[i] = [scorer.not_scorable(items[i], error) for scorer in scorers]

    if on_item_complete is not None:
        for item, output, row in zip(data, outputs, results):
            on_item_complete({"item": item, "targetResult": output,
                              "scorerResults": {scorer.id: result for scorer, result in zip(scorers, row)}})

    by_scorer = {scorer.id: [row[j] for row in results] for j, scorer in enumerate(scorers)}
    return {
        "scores": {sid: mean_scores(rows) for sid, rows in by_scorer.items()},
        "summary": {
            "totalItems": len(data),
            "notScorable": {sid: sum(r.score is None for r in rows) for sid, rows in by_scorer.items()},
        },
    }


def _run_target(target: Any, inputs: list, workers: int) -> tuple[list, list]:
    def call(input):
        try:
            return _call_target(target, input), None
        except Exception as exc:  # the item becomes not scorable; the others go on
            return None, RuntimeError(f"target failed: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        pairs = list(pool.map(call, inputs))
    return [p[0] for p in pairs], [p[1] for p in pairs]
