"""What every scorer shares: the item it scores, `run()`, and not-scorable results."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from ..errors import NotScorable
from ..messages import input_text, output_text
from ..runner import Steps, run_scorers
from ..types import ScoreResult


@dataclass(frozen=True)
class ScoreItem:
    """One item to score: the raw input/output (strings or message structures) and extras."""

    input: Any
    output: Any
    ground_truth: Any = None
    request_context: Any = None
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def input_text(self) -> str:
        return input_text(self.input)

    @property
    def output_text(self) -> str:
        return output_text(self.output)


class Scorer:
    """A scorer decides; judges compute. Subclasses implement `steps(item)` (see runner.py)."""

    id: str = "scorer"
    name: str = "Scorer"
    description: str = ""

    def steps(self, item: ScoreItem) -> Steps:
        raise NotImplementedError

    def judges(self) -> list:
        """The judges this scorer asks (for manifests and cache keys)."""
        return []

    def options(self) -> dict:
        """The scorer's settings, recorded in run manifests."""
        return {}

    def run(self, input: Any = None, output: Any = None, ground_truth: Any = None,
            request_context: Any = None, run_id: str | None = None) -> ScoreResult:
        """Score one item. Equivalent to the runner with a single item."""
        item = ScoreItem(input, output, ground_truth, request_context, run_id or str(uuid.uuid4()))
        return run_scorers([item], [self])[0][0]

    def result(self, item: ScoreItem, score: float | None, **fields: Any) -> ScoreResult:
        return ScoreResult(scorer_id=self.id, run_id=item.run_id, score=score, **fields)

    def not_scorable(self, item: ScoreItem, exc: BaseException) -> ScoreResult:
        raw = exc.raw if isinstance(exc, NotScorable) else None
        message = str(exc) if isinstance(exc, (NotScorable, ValueError)) else f"{type(exc).__name__}: {exc}"
        judge = getattr(self, "judge", None)  # a not-scorable result still says which judge was asked
        return self.result(item, None, error=message, raw_reply=raw, judge=getattr(judge, "name", None))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"
