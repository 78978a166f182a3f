"""Running totals of a scoring run, for the summary table (constant memory)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .table import format_table
from .types import ScoreResult


@dataclass
class ScorerTotals:
    scored: int = 0
    not_scorable: int = 0
    total: float = 0.0
    low: float | None = None
    high: float | None = None

    def add(self, result: ScoreResult) -> None:
        if result.score is None:
            self.not_scorable += 1
            return
        self.scored += 1
        self.total += result.score
        self.low = result.score if self.low is None else min(self.low, result.score)
        self.high = result.score if self.high is None else max(self.high, result.score)

    @property
    def mean(self) -> float | None:
        return self.total / self.scored if self.scored else None


@dataclass
class RunSummary:
    lines: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    scorers: dict[str, ScorerTotals] = field(default_factory=dict)

    def add(self, scorer_id: str, result: ScoreResult) -> None:
        self.scorers.setdefault(scorer_id, ScorerTotals()).add(result)

    def table(self, max_errors: int = 10) -> str:
        rows = [[sid, t.scored, t.not_scorable, t.mean, t.low, t.high] for sid, t in self.scorers.items()]
        text = format_table(["scorer", "scored", "not scorable", "mean", "min", "max"], rows)
        text += f"\n\nlines read: {self.lines}, malformed: {len(self.bad_lines)}"
        for line, error in self.bad_lines[:max_errors]:
            text += f"\n  {error}" if error.startswith("line ") else f"\n  line {line}: {error}"
        if len(self.bad_lines) > max_errors:
            text += f"\n  ... and {len(self.bad_lines) - max_errors} more (see the errors file)"
        return text
