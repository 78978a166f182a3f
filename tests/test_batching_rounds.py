"""N items x 3 scorers cost one judge call per step, not one per item (the runner batches)."""

import pytest

from evallocal.runner import run_scorers
from evallocal.scorers.answer_relevancy import create_answer_relevancy_scorer
from evallocal.scorers.base import ScoreItem
from evallocal.scorers.bias import create_bias_scorer
from evallocal.scorers.hallucination import create_hallucination_scorer
from scripted_judges import embedder, llm, nli


def _shared_llm():
    return llm({"claims": ["c1.", "c2."], "statements": ["s1.", "s2."], "opinions": ["o1."],
                "verdict": lambda r: "no", "result": lambda r: "yes", "reason": "The score is fine."})


@pytest.mark.parametrize("n", [1, 7, 40])
def test_three_scorers_share_three_llm_calls(n):
    judge = _shared_llm()
    scorers = [create_hallucination_scorer(judge, context=["ctx"], reason="llm"),
               create_answer_relevancy_scorer(judge, reason="llm"),
               create_bias_scorer(judge, reason="llm")]
    items = [ScoreItem(input=f"question {i}", output=f"c1. c2. s1. s2. o1. answer {i}") for i in range(n)]
    results = run_scorers(items, scorers)
    assert all(r.scorable for row in results for r in row)
    # preprocess, analyze, generateReason: one batched call each, whatever n
    assert len(judge.calls) == 3
    sizes = [len(call) for call in judge.calls]
    # round 1: one extraction per item and scorer; round 2: 2 claims + 2 statements + 1 opinion per
    # item; round 3: one reason per item and scorer
    assert sizes == [3 * n, 5 * n, 3 * n]


@pytest.mark.parametrize("n", [1, 12])
def test_joint_verdicts_also_three_calls(n):
    judge = llm({"claims": ["c1.", "c2."], "verdicts": [{"verdict": "no", "reason": "r"}] * 2,
                 "reason": "The score is fine."})
    scorer = create_hallucination_scorer(judge, context=["ctx"], reason="llm", per_claim=False)
    items = [ScoreItem(input="q", output=f"c1. c2. answer {i}") for i in range(n)]
    run_scorers(items, [scorer])
    assert [len(c) for c in judge.calls] == [n, n, n]


def test_embedded_modes_one_call_per_judge_and_round():
    """NLI hallucination + embedding relevancy + LLM bias: each judge is called once per round."""
    from evallocal.text.spacy_judge import default_spacy_judge

    nli_judge = nli(lambda p, h: 0.9)
    emb = embedder({})
    emb.respond = lambda r: (1.0, 0.0)
    bias_judge = llm({"opinions": ["o."], "result": lambda r: "no"})
    scorers = [create_hallucination_scorer(nli_judge, context=["ctx"]),
               create_answer_relevancy_scorer(emb),
               create_bias_scorer(bias_judge, reason="template")]
    n = 9
    items = [ScoreItem(input=f"q{i}", output=f"First sentence {i}. Second one.") for i in range(n)]
    spacy = default_spacy_judge()
    calls = []
    original = spacy.answer
    spacy.answer = lambda requests: calls.append(len(requests)) or original(requests)
    try:
        results = run_scorers(items, scorers)
    finally:
        del spacy.answer
    assert all(r.scorable for row in results for r in row)
    assert calls == [2 * n]  # the hallucination and relevancy sentence splits share one spaCy call
    claims = sum(len(row[0].preprocess_step_result["claims"]) for row in results)
    statements = sum(len(row[1].preprocess_step_result["statements"]) for row in results)
    assert claims >= n and [len(c) for c in nli_judge.calls] == [claims]
    assert [len(c) for c in emb.calls] == [n + statements]  # question + statements, all items at once
    assert [len(c) for c in bias_judge.calls] == [n, n]
