"""The judge interface: a list of requests in, a list of answers out, in the same order."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

from ..types import JudgeFailure, Request


class JudgeKindError(TypeError):
    """A judge was asked for a kind of request it does not serve."""


class Judge(ABC):
    """A model (or tool) that answers requests in batches.

    Subclasses set `name` (stable identity: recorded in results, manifests and cache keys) and
    `kinds` (the request kinds served), and implement `_answer`. An answer is the response value
    or a `JudgeFailure` for a request that could not be answered; the list keeps request order.
    """

    name: str = "judge"
    kinds: frozenset[str] = frozenset()

    def answer(self, requests: Sequence[Request]) -> list[Any | JudgeFailure]:
        for request in requests:
            if request.kind not in self.kinds:
                raise JudgeKindError(
                    f"judge {self.name!r} cannot answer {request.kind!r} requests; "
                    f"it serves {sorted(self.kinds)}. Choose a judge that serves {request.kind!r}."
                )
        if not requests:
            return []
        answers = self._answer(list(requests))
        if len(answers) != len(requests):
            raise RuntimeError(f"judge {self.name!r} returned {len(answers)} answers for {len(requests)} requests")
        return answers

    @abstractmethod
    def _answer(self, requests: list[Request]) -> list[Any | JudgeFailure]: ...

    def describe(self) -> dict:
        """Identity for manifests: subclasses add file hashes, dtype, decoding settings."""
        return {"name": self.name, "kinds": sorted(self.kinds)}
