"""Scripted fake judges and scorers for tests of the plumbing (no models)."""

from evallocal.judges.base import Judge
from evallocal.runner import Ask, unwrap
from evallocal.scorers.base import Scorer
from evallocal.types import EmbedRequest, JudgeFailure


class EchoJudge(Judge):
    """Answers an embed request with the length of its text; counts calls; can fail on a marker."""

    name = "echo"
    kinds = frozenset({EmbedRequest.kind})

    def __init__(self, fail_on: str | None = None, crash: bool = False):
        self.calls: list[int] = []
        self.fail_on = fail_on
        self.crash = crash

    def _answer(self, requests):
        self.calls.append(len(requests))
        if self.crash:
            raise RuntimeError("model exploded")
        return [JudgeFailure("refused", raw="garbage") if self.fail_on and self.fail_on in r.text else len(r.text)
                for r in requests]


class TwoStepScorer(Scorer):
    """Asks the judge twice (like preprocess -> analyze); score = len(output) / (len(input) + len(output))."""

    id = "two-step"

    def __init__(self, judge):
        self.judge = judge

    def steps(self, item):
        if item.output_text == "boom":
            raise ValueError("boom is not an answer")
        (n_in,) = yield Ask(self.judge, (EmbedRequest(item.input_text),))
        (n_out,) = yield Ask(self.judge, (EmbedRequest(item.output_text),))
        n_in, n_out = unwrap(n_in, "input step"), unwrap(n_out, "output step")
        return self.result(item, n_out / (n_in + n_out) if n_in + n_out else 0.0)
