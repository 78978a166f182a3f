import json
import math

from evallocal.scorers.answer_relevancy import create_answer_relevancy_scorer, relevancy_score
from evallocal.types import JudgeFailure
from scripted_judges import embedder, llm, prompt_of


def test_yes_unsure_no_gives_reference_043():
    judge = llm({"statements": ["Paris.", "Lyon is big.", "I like cats."], "result": ["yes", " UNSURE ", "no"],
                 "reason": "r"})
    result = create_answer_relevancy_scorer(judge, reason="template").run(
        input="Capital of France?", output="Paris. Lyon is big. I like cats.")
    assert result.score == 0.43
    assert [r["result"] for r in result.analyze_step_result["results"]] == ["yes", "unsure", "no"]
    assert result.preprocess_step_result == {"statements": ["Paris.", "Lyon is big.", "I like cats."]}
    assert result.judge == "fake-llm"
    assert '"I like cats."' in result.reason and '"Lyon is big."' in result.reason
    assert result.preprocess_prompt == prompt_of(judge.requests[0])
    assert all(prompt_of(r) in result.analyze_prompt for r in judge.requests[1:])


def test_options_merge_with_defaults():
    judge = llm({"statements": ["a", "b", "c"], "result": ["yes", "unsure", "no"] * 3})
    assert create_answer_relevancy_scorer(judge, scale=10, reason="none").run(input="q", output="a b c").score == 4.33
    assert create_answer_relevancy_scorer(judge, options={"uncertaintyWeight": 0.6}, reason="none").run(
        input="q", output="a b c").score == 0.53
    assert create_answer_relevancy_scorer(judge, options={"scale": 10}, reason="none").run(
        input="q", output="a b c").score == 4.33


def test_formula_edges():
    assert relevancy_score([]) == 0
    assert relevancy_score([{"result": "Yes"}, {"result": "no"}]) == 0.5
    assert relevancy_score([{"result": "unsure"}], uncertainty_weight=0.3, scale=1) == 0.3


def test_empty_output_scores_zero():
    judge = llm({})
    result = create_answer_relevancy_scorer(judge, reason="template").run(input="q", output="")
    assert result.score == 0 and judge.calls == []


def test_joint_mode_count_constraint():
    judge = llm({"statements": ["a", "b"], "results": [{"result": "yes", "reason": "r"}] * 2})
    result = create_answer_relevancy_scorer(judge, reason="none", per_statement=False).run(input="q", output="a b c")
    assert result.score == 1
    schema = json.loads(judge.requests[1].schema_json)["properties"]["results"]
    assert schema["minItems"] == schema["maxItems"] == 2
    assert schema["items"]["properties"]["result"]["enum"] == ["yes", "unsure", "no"]
    short = llm({"statements": ["a", "b"], "results": [{"result": "yes", "reason": "r"}]})
    result = create_answer_relevancy_scorer(short, reason="none", per_statement=False).run(input="q", output="a b c")
    assert result.score is None and result.raw_reply


def test_invalid_answer_not_scorable():
    judge = llm({"statements": ["a"], "result": [{"result": "kinda", "reason": "r"}]})
    result = create_answer_relevancy_scorer(judge, reason="none").run(input="q", output="a b c")
    assert result.score is None and "kinda" in result.raw_reply
    judge = llm({"statements": JudgeFailure("unfinished JSON", raw='{"statements": ["a')})
    result = create_answer_relevancy_scorer(judge, reason="none").run(input="q", output="a b c")
    assert result.score is None and result.raw_reply == '{"statements": ["a'


def _unit(*v):
    n = math.sqrt(sum(x * x for x in v))
    return tuple(x / n for x in v)


def test_embedding_mode_thresholds():
    q = "What is the capital of France?"
    vectors = {q: _unit(1, 0, 0), "Paris is the capital.": _unit(1, 0.2, 0),
               "France is in Europe.": _unit(0.4, 1, 0), "Cats purr.": _unit(0, 0, 1)}
    judge = embedder(vectors)
    scorer = create_answer_relevancy_scorer(judge, yes_threshold=0.8, unsure_threshold=0.3)
    result = scorer.run(input=q, output="Paris is the capital. France is in Europe. Cats purr.")
    assert [r["result"] for r in result.analyze_step_result["results"]] == ["yes", "unsure", "no"]
    assert result.score == 0.43 and result.judge == "fake-embed"
    assert result.reason.startswith("The score is 0.43 because 1 of 3 statements")  # template by default
    assert len(judge.calls) == 1 and len(judge.calls[0]) == 4  # question + 3 statements in one request list


def test_embedding_mode_empty_question():
    judge = embedder({})
    result = create_answer_relevancy_scorer(judge).run(input="", output="Some answer.")
    assert result.score == 0 and judge.calls == []


def test_end_to_end_embedded_default():
    """The embedded default: spaCy sentences + all-MiniLM-L6-v2 similarity, template reasons."""
    from evallocal.models import ModelError

    try:
        scorer = create_answer_relevancy_scorer()
    except ModelError as exc:  # pragma: no cover - the package ships with the install
        import pytest
        pytest.skip(f"embedding model not installed: {exc}")
    question = "What is the capital of France?"
    result = scorer.run(input=question, output="The capital of France is Paris. I had pancakes for breakfast.")
    assert result.scorable, result.error
    assert result.judge == "all-minilm-l6-v2"
    assert [r["result"] for r in result.analyze_step_result["results"]] == ["yes", "no"]
    assert result.score == 0.5
    assert '"I had pancakes for breakfast."' in result.reason
    assert scorer.run(input=question, output="").score == 0
