"""The runner batches every item's requests per round and isolates per-item failures."""

from evallocal.runner import run_scorers
from evallocal.scorers.base import ScoreItem

from fakes import EchoJudge, TwoStepScorer


def items(*outputs):
    return [ScoreItem(input="abc", output=o) for o in outputs]


def test_rounds_not_calls_per_item():
    judge = EchoJudge()
    scorers = [TwoStepScorer(judge), TwoStepScorer(judge)]
    results = run_scorers(items(*["x" * n for n in range(1, 51)]), scorers)
    assert judge.calls == [100, 100]  # 50 items x 2 scorers, two rounds
    assert results[0][0].score == 1 / 4 and results[49][1].score == 50 / 53


def test_exception_in_one_item_spares_the_others():
    results = run_scorers(items("ok", "boom", "fine"), [TwoStepScorer(EchoJudge())])
    assert [r[0].score for r in results] == [2 / 5, None, 4 / 7]
    assert results[1][0].error == "boom is not an answer"


def test_judge_failure_is_not_scorable_with_raw_reply():
    results = run_scorers(items("ok", "please FAIL"), [TwoStepScorer(EchoJudge(fail_on="FAIL"))])
    assert results[0][0].score == 2 / 5
    failed = results[1][0]
    assert failed.score is None and "output step: refused" in failed.error and failed.raw_reply == "garbage"


def test_judge_crash_fails_only_its_items():
    from evallocal.scorers.completeness import create_completeness_scorer

    results = run_scorers(items("abc"), [TwoStepScorer(EchoJudge(crash=True)), create_completeness_scorer()])
    crashed, complete = results[0]
    assert crashed.score is None and "model exploded" in crashed.error
    assert complete.score == 1.0


def test_results_keep_item_and_scorer_order():
    judge = EchoJudge()
    results = run_scorers(items("a", "bbbb"), [TwoStepScorer(judge)])
    assert [r[0].score for r in results] == [1 / 4, 4 / 7]


def test_none_output_is_a_clear_error():
    result = TwoStepScorer(EchoJudge()).run(input="q", output=None)
    assert result.score is None and "output is None" in result.error
