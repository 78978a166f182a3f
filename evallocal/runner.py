"""Drives scorers in lockstep and batches their judge requests.

A scorer's `steps(item)` is a generator: it yields `Ask(judge, requests)` and receives the
answers, until it returns a `ScoreResult`. The runner advances every (item, scorer) generator
to its next `Ask`, sends all requests of a round to each judge in one call, routes the answers
back and repeats. Rounds = the longest step chain, whatever the number of items.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

from .errors import NotScorable
from .types import JudgeFailure, Request, ScoreResult

if TYPE_CHECKING:
    from .judges.base import Judge
    from .scorers.base import ScoreItem, Scorer

log = logging.getLogger("evallocal.runner")


@dataclass(frozen=True)
class Ask:
    """What a scorer step yields: requests for one judge (answers come back in order)."""

    judge: "Judge"
    requests: tuple[Request, ...]


Steps = Generator[Ask, list[Any], ScoreResult]


class _Task:
    __slots__ = ("scorer", "item", "steps", "ask", "result")

    def __init__(self, scorer: "Scorer", item: "ScoreItem"):
        self.scorer = scorer
        self.item = item
        self.steps: Steps | None = None
        self.ask: Ask | None = None
        self.result: ScoreResult | None = None

    def advance(self, answers: list[Any] | None) -> None:
        """Step the scorer once; record its next Ask or its final result (a failure included)."""
        try:
            if self.steps is None:
                self.steps = self.scorer.steps(self.item)
                ask = next(self.steps)
            else:
                ask = self.steps.send(answers)
            if not isinstance(ask, Ask):
                raise TypeError(f"scorer {self.scorer.id} yielded {type(ask).__name__}, expected Ask")
            self.ask = ask
        except StopIteration as stop:
            self.ask = None
            self.result = stop.value
        except Exception as exc:  # one item's failure must not cost the others their results
            self.ask = None
            self.result = self.scorer.not_scorable(self.item, exc)

    def fail(self, exc: BaseException) -> None:
        if self.steps is not None:
            self.steps.close()
        self.ask = None
        self.result = self.scorer.not_scorable(self.item, exc)


def run_scorers(items: Sequence["ScoreItem"], scorers: Sequence["Scorer"], *,
                wrap_judge: "Callable[[Judge], Judge] | None" = None) -> list[list[ScoreResult]]:
    """Score every item with every scorer. Returns results[item_index][scorer_index].

    `wrap_judge` maps each judge to the object that actually answers (e.g. a cache in front of
    it); grouping stays by the scorer's judge object, so it must map one judge to one wrapper.
    """
    tasks = [[_Task(scorer, item) for scorer in scorers] for item in items]
    flat = [task for row in tasks for task in row]
    for task in flat:
        task.advance(None)
    round_no = 0
    while True:
        waiting = [task for task in flat if task.ask is not None]
        if not waiting:
            break
        round_no += 1
        by_judge: dict[int, list[_Task]] = {}
        for task in waiting:
            by_judge.setdefault(id(task.ask.judge), []).append(task)
        for group in by_judge.values():
            _answer_group(group, round_no, wrap_judge)
    return [[task.result for task in row] for row in tasks]


def _answer_group(group: list[_Task], round_no: int, wrap_judge=None) -> None:
    judge = group[0].ask.judge if wrap_judge is None else wrap_judge(group[0].ask.judge)
    requests = [request for task in group for request in task.ask.requests]
    started = time.perf_counter()
    try:
        answers = judge.answer(requests)
    except Exception as exc:  # a judge crash fails the items that asked, not the run
        log.warning("judge %s failed on %d requests: %s", judge.name, len(requests), exc)
        for task in group:
            task.fail(exc)
        return
    log.debug(
        "round %d: judge %s answered %d requests for %d tasks in %.3fs",
        round_no, judge.name, len(requests), len(group), time.perf_counter() - started,
    )
    start = 0
    for task in group:
        count = len(task.ask.requests)
        task.advance(answers[start:start + count])
        start += count


def unwrap(answer: Any, what: str) -> Any:
    """The answer's value, or NotScorable (carrying the raw reply) when the judge failed."""
    if isinstance(answer, JudgeFailure):
        raise NotScorable(f"{what}: {answer.error}", raw=answer.raw)
    return answer


__all__ = ["Ask", "run_scorers", "unwrap", "NotScorable"]
