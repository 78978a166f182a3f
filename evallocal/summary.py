"""Running totals of a scoring run, for the summary table (constant memory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

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
        self.add_score(result.score)

    def add_score(self, score: float | None) -> None:
        if score is None:
            self.not_scorable += 1
            return
        self.scored += 1
        self.total += score
        self.low = score if self.low is None else min(self.low, score)
        self.high = score if self.high is None else max(self.high, score)

    @property
    def mean(self) -> float | None:
        return self.total / self.scored if self.scored else None


@dataclass
class RunSummary:
    lines: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    scorers: dict[str, ScorerTotals] = field(default_factory=dict)
    malformed: int = 0
    max_kept_errors: int = 1000  # the table shows a few; the errors file has them all

    def add(self, scorer_id: str, result: ScoreResult) -> None:
        self.scorers.setdefault(scorer_id, ScorerTotals()).add(result)

    def add_line(self, line: Mapping) -> None:
        """Count one written output line (used to rebuild the totals when a run resumes)."""
        self.lines += 1
        if "error" in line:
            self.bad(line["line"], line["error"])
            return
        for scorer_id, result in (line.get("results") or {}).items():
            self.scorers.setdefault(scorer_id, ScorerTotals()).add_score(result.get("score"))

    def bad(self, line: int, error: str) -> None:
        self.malformed += 1
        if len(self.bad_lines) < self.max_kept_errors:
            self.bad_lines.append((line, error))

    def malformed_count(self) -> int:
        return max(self.malformed, len(self.bad_lines))

    def counts(self) -> dict:
        return {"lines": self.lines, "malformed": self.malformed_count(),
                "scorers": {sid: {"scored": t.scored, "not_scorable": t.not_scorable, "mean": t.mean,
                                  "min": t.low, "max": t.high} for sid, t in self.scorers.items()}}

    def table(self, max_errors: int = 10) -> str:
        rows = [[sid, t.scored, t.not_scorable, t.mean, t.low, t.high] for sid, t in self.scorers.items()]
        text = format_table(["scorer", "scored", "not scorable", "mean", "min", "max"], rows)
        malformed = self.malformed_count()
        text += f"\n\nlines read: {self.lines}, malformed: {malformed}"
        for line, error in self.bad_lines[:max_errors]:
            text += f"\n  {error}" if error.startswith(("line ", "row ")) else f"\n  line {line}: {error}"
        if malformed > max_errors:
            text += f"\n  ... and {malformed - max_errors} more (see the errors file)"
        return text
