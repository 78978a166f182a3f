import asyncio

import pytest

from evallocal import create_completeness_scorer, run_evals
from evallocal.errors import InputError

from fakes import EchoJudge, TwoStepScorer


def test_plain_callable_target_and_callback():
    seen = []
    result = run_evals(
        data=[{"input": "apples, oranges, and bananas"}, {"input": "The quick brown fox jumps over the lazy dog"}],
        scorers=[create_completeness_scorer()],
        target=lambda question: "apples and bananas" if "apples" in question else "The fox jumps over the dog",
        on_item_complete=seen.append,
    )
    assert result["scores"]["completeness-scorer"] == pytest.approx((0.75 + 0.625) / 2)
    assert result["summary"]["totalItems"] == 2
    assert [s["scorerResults"]["completeness-scorer"].score for s in seen] == [0.75, 0.625]
    assert seen[0]["targetResult"] == "apples and bananas"


def test_without_target_scores_recorded_output():
    result = run_evals(data=[{"input": "apples, oranges, and bananas", "output": "apples and bananas"}],
                       scorers=[create_completeness_scorer()])
    assert result["scores"]["completeness-scorer"] == 0.75


def test_async_target_and_agent_object():
    async def agent(question):
        await asyncio.sleep(0)
        return "xy"

    class Agent:
        def generate(self, question):
            return "xyz"

    scorer = TwoStepScorer(EchoJudge())
    assert run_evals(data=[{"input": "abc"}], scorers=[scorer], target=agent)["scores"]["two-step"] == 2 / 5
    assert run_evals(data=[{"input": "abc"}], scorers=[scorer], target=Agent())["scores"]["two-step"] == 0.5


def test_target_failure_is_isolated_and_excluded_from_mean():
    def target(question):
        if question == "bad":
            raise ConnectionError("agent down")
        return "abc"

    seen = []
    result = run_evals(data=[{"input": "abc"}, {"input": "bad"}, {"input": "abc"}],
                       scorers=[TwoStepScorer(EchoJudge())], target=target, on_item_complete=seen.append,
                       concurrency=2)
    assert result["scores"]["two-step"] == 0.5
    assert result["summary"] == {"totalItems": 3, "notScorable": {"two-step": 1}}
    failed = seen[1]["scorerResults"]["two-step"]
    assert failed.score is None and "agent down" in failed.error


def test_all_not_scorable_gives_none_not_zero():
    result = run_evals(data=[{"input": "q", "output": "boom"}], scorers=[TwoStepScorer(EchoJudge())])
    assert result["scores"]["two-step"] is None


def test_empty_data_is_an_error():
    with pytest.raises(InputError, match="at least one item"):
        run_evals(data=[], scorers=[create_completeness_scorer()])


def test_missing_output_without_target_names_the_item():
    with pytest.raises(InputError, match=r"data\[1\] has no 'output' key"):
        run_evals(data=[{"input": "a", "output": "b"}, {"input": "c"}], scorers=[create_completeness_scorer()])
