"""What the model-judged scorers (hallucination, answer relevancy, bias) share.

- `resolve_model`: a Judge instance, a NAME|PATH string or None (the embedded default).
- JSON-schema builders: every string and array is bounded, so a grammar-constrained judge
  always finishes inside its token budget (see shared notes on constrained decoding).
- `check_object`: a judge answer is checked against what the step needs (keys, verdict enum,
  number of verdicts); anything else raises NotScorable with the raw reply — never a score of 0.
- `resolve_context`: `get_context(run=..., step=...)` (sync or async) > per-item context >
  static context.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import os
import re
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import NotScorable
from ..judges.base import Judge
from ..runner import unwrap
from ..types import GenerateRequest

REASON_MODES = ("llm", "template", "none")
# Share of an extracted entry's words that must occur in the output (see `grounded`).
DEFAULT_GROUNDING = 0.5

# --- judges ------------------------------------------------------------------------------------


def resolve_model(model: Any, kinds: str | Sequence[str], default: Callable[[], Judge]) -> Judge:
    """The judge for `model`: an instance as is, None -> `default()`, a NAME|PATH through the
    model registry as the first of `kinds` that the model serves (e.g. hallucination takes an NLI
    model, else an LLM)."""
    if model is None:
        return default()
    if isinstance(model, Judge):
        return model
    if isinstance(model, (str, os.PathLike)):
        from ..models import ModelKindError, resolve_judge

        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        for kind in kinds[:-1]:
            try:
                return resolve_judge(model, kind)
            except ModelKindError:
                continue
        return resolve_judge(model, kinds[-1])
    raise TypeError(
        f"model must be a Judge, a model name or path, or None (the embedded default); got {type(model).__name__}"
    )


def default_llm() -> Judge:
    from ..judges.defaults import default_llm_judge

    return default_llm_judge()


def snake_options(options: Mapping | None) -> dict:
    """Reference-style options ({"getContext": ..., "uncertaintyWeight": ...}) as keyword names.
    They merge over the defaults (the reference replaces the whole options object)."""
    names = {"getContext": "get_context", "uncertaintyWeight": "uncertainty_weight"}
    return {names.get(k, k): v for k, v in (options or {}).items()}


def check_reason_mode(reason: str | None, llm_mode: bool = False) -> str:
    """None picks the default: "llm" when the scorer's own judge is an LLM (like the reference),
    "template" for NLI / embedding modes (no LLM needed at all)."""
    if reason is None:
        return "llm" if llm_mode else "template"
    if reason not in REASON_MODES:
        raise ValueError(f"reason must be one of {REASON_MODES}, got {reason!r}")
    return reason


# --- JSON schemas --------------------------------------------------------------------------------


def string(max_length: int) -> dict:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def enum(values: Sequence[str]) -> dict:
    return {"type": "string", "enum": list(values)}


def array(items: dict, max_items: int, min_items: int = 0) -> dict:
    return {"type": "array", "items": items, "minItems": min_items, "maxItems": max_items}


def obj(**properties: dict) -> dict:
    """An object whose keys are all required, in this order (decoding follows the order)."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def token_budget(schema: Mapping) -> int:
    """A max_new_tokens bound for a schema: generous for English (~3 chars per token) plus the
    JSON punctuation, so a well-behaved answer never runs out and a looping one stops early."""
    kind = schema.get("type")
    if kind == "object":
        return 2 + sum(4 + token_budget(sub) for sub in schema.get("properties", {}).values())
    if kind == "array":
        return 2 + schema.get("maxItems", 8) * (2 + token_budget(schema.get("items", {})))
    if "enum" in schema:
        return 2 + max(len(v) for v in schema["enum"])
    if kind == "string":
        return 2 + math.ceil(schema.get("maxLength", 200) / 3)
    return 8


def generate(prompt: str, schema: dict) -> GenerateRequest:
    """One user message (recorded verbatim as the step's prompt) and its answer schema."""
    return GenerateRequest.build([{"role": "user", "content": prompt}], schema, token_budget(schema))


def join_prompts(prompts: list[str]) -> str:
    """Several prompts of one step (one request each), recorded in order."""
    if len(prompts) == 1:
        return prompts[0]
    return "\n\n".join(f"### request {i} of {len(prompts)}\n{p}" for i, p in enumerate(prompts, 1))


# --- checking answers ----------------------------------------------------------------------------


def raw_of(answer: Any) -> str:
    try:
        return json.dumps(answer, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(answer)


def check_object(answer: Any, what: str, key: str, *, count: int | None = None,
                 item_key: str | None = None, allowed: Iterable[str] | None = None) -> list:
    """The list under `key` of a judge's answer, checked; NotScorable (raw reply kept) otherwise.

    `count`: the exact number of entries required; `item_key`/`allowed`: each entry is an object
    whose `item_key` (trimmed, case-insensitive) is one of `allowed`.
    """
    answer = unwrap(answer, what)
    if not isinstance(answer, Mapping) or not isinstance(answer.get(key), list):
        raise NotScorable(f"{what}: expected an object with a {key!r} list", raw=raw_of(answer))
    entries = answer[key]
    if count is not None and len(entries) != count:
        raise NotScorable(f"{what}: expected {count} entries in {key!r}, got {len(entries)}", raw=raw_of(answer))
    if item_key is None:
        if not all(isinstance(e, str) for e in entries):
            raise NotScorable(f"{what}: {key!r} must be a list of strings", raw=raw_of(answer))
        return entries
    allowed_set = {a.lower() for a in allowed or ()}
    for entry in entries:
        value = entry.get(item_key) if isinstance(entry, Mapping) else None
        if not isinstance(value, str) or (allowed_set and norm(value) not in allowed_set):
            raise NotScorable(
                f"{what}: each entry needs {item_key!r} in {sorted(allowed_set)}, got {value!r}", raw=raw_of(answer)
            )
    return entries


def check_single(answer: Any, what: str, key: str, allowed: Iterable[str] | None = None) -> dict:
    """One verdict object ({key: value, "reason": ...}) from a per-item request."""
    answer = unwrap(answer, what)
    value = answer.get(key) if isinstance(answer, Mapping) else None
    allowed_set = {a.lower() for a in allowed or ()}
    if not isinstance(value, str) or (allowed_set and norm(value) not in allowed_set):
        raise NotScorable(f"{what}: expected {key!r} in {sorted(allowed_set)}, got {value!r}", raw=raw_of(answer))
    return dict(answer)


def check_reason(answer: Any, what: str = "generateReason") -> str:
    answer = unwrap(answer, what)
    reason = answer.get("reason") if isinstance(answer, Mapping) else None
    if not isinstance(reason, str):
        raise NotScorable(f"{what}: expected an object with a 'reason' string", raw=raw_of(answer))
    return reason


def norm(value: str) -> str:
    """Verdict strings compare case-insensitively after trimming (like the reference)."""
    return value.strip().lower()


def unique(texts: Iterable[str]) -> list[str]:
    """Trimmed, non-empty, first occurrence kept (tiny judges like to repeat themselves)."""
    seen, out = set(), []
    for text in texts:
        text = text.strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def grounded(texts: Sequence[str], source: str, min_overlap: float) -> tuple[list[str], list[str]]:
    """(kept, dropped): an extracted claim/statement/opinion is kept when at least `min_overlap`
    of its words occur in the text it was extracted from. Small judges copy words of the
    instructions ("views", "one claim per fact") instead of extracting; those entries are not
    about the output and would distort the score. 0 keeps everything."""
    if min_overlap <= 0:
        return list(texts), []
    vocabulary = {w.lower() for w in _WORD.findall(source)}
    kept, dropped = [], []
    for text in texts:
        words = [w.lower() for w in _WORD.findall(text)]
        share = sum(w in vocabulary for w in words) / len(words) if words else 0
        (kept if share >= min_overlap else dropped).append(text)
    return kept, dropped


def quote_list(texts: Sequence[str], limit: int = 5) -> str:
    shown = "; ".join(f'"{t}"' for t in texts[:limit])
    more = len(texts) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def fmt_score(score: float) -> str:
    return f"{score:g}"


# --- context -------------------------------------------------------------------------------------


def as_context_list(context: Any) -> list[str]:
    """A context given as a string or a list of strings (other values are JSON-encoded)."""
    if context is None:
        return []
    if isinstance(context, str):
        return [context] if context.strip() else []
    if isinstance(context, Mapping):
        return [json.dumps(context, ensure_ascii=False, default=str)]
    out = []
    for part in context:
        if isinstance(part, str):
            if part.strip():
                out.append(part)
        elif part is not None:
            out.append(json.dumps(part, ensure_ascii=False, default=str))
    return out


def item_context(item: Any) -> Any:
    """A per-item context: `request_context["context"]` (what the CLI sets from a data line's
    `context` field), or an attribute `context` on the item. None when absent."""
    rc = getattr(item, "request_context", None)
    if isinstance(rc, Mapping) and "context" in rc:
        return rc["context"]
    return getattr(item, "context", None)


def run_view(item: Any) -> dict:
    """What `get_context(run=...)` receives: the item's fields, reference-style keys included."""
    return {
        "input": item.input,
        "output": item.output,
        "ground_truth": item.ground_truth,
        "groundTruth": item.ground_truth,
        "request_context": item.request_context,
        "requestContext": item.request_context,
        "run_id": item.run_id,
        "runId": item.run_id,
    }


def call_maybe_async(fn: Callable, **kwargs: Any) -> Any:
    """Call a sync or async function from sync code, even when an event loop is running here."""
    result = fn(**kwargs)
    if not inspect.isawaitable(result):
        return result
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(result))
    box: dict = {}

    def runner():
        try:
            box["value"] = asyncio.run(_await(result))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner, name="evallocal-get-context")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _await(awaitable):
    return await awaitable


def resolve_context(item: Any, static: Any, get_context: Callable | None, step: str = "analyze") -> list[str]:
    """get_context (sync or async) wins; else the item's own context; else the static context."""
    if get_context is not None:
        return as_context_list(call_maybe_async(get_context, run=run_view(item), step=step))
    per_item = item_context(item)
    if per_item is not None:
        return as_context_list(per_item)
    return as_context_list(static)
