import asyncio
import json

import pytest

from evallocal.scorers.hallucination import create_hallucination_scorer, hallucination_score
from evallocal.scorers.tool_results import extract_tool_results
from evallocal.types import JudgeFailure
from scripted_judges import llm, nli, prompt_of

CONTEXT = ["The first iPhone was announced on January 9, 2007.", "It was released on June 29, 2007."]


def test_llm_mode_reference_arithmetic_and_recorded_prompts():
    judge = llm({"claims": ["A was announced in 2007.", "B was released in June.", "C is pioneering."],
                 "verdict": ["no", "no", "yes"], "reason": "The score is 0.33 because C is not backed."})
    output = "A was announced in 2007 and B was released in June; C is pioneering."
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="llm").run(input="q", output=output)
    assert result.score == 0.33
    assert result.judge == "fake-llm"
    assert result.preprocess_step_result == {"claims": ["A was announced in 2007.", "B was released in June.",
                                                        "C is pioneering."]}
    verdicts = result.analyze_step_result["verdicts"]
    assert [v["verdict"] for v in verdicts] == ["no", "no", "yes"]
    assert verdicts[2]["statement"] == "C is pioneering."
    assert result.reason == "The score is 0.33 because C is not backed."
    # the prompts recorded are the prompts sent
    sent = [prompt_of(r) for r in judge.requests]
    assert result.preprocess_prompt == sent[0]
    assert all(p in result.analyze_prompt for p in sent[1:4])
    assert result.generate_reason_prompt == sent[4]
    assert output in result.preprocess_prompt and CONTEXT[0] in sent[1]
    d = result.to_dict()
    assert d["preprocessPrompt"] == sent[0] and d["generateReasonPrompt"] == sent[4]


def test_js_rounding_and_scale():
    verdicts = [{"verdict": "yes"}] + [{"verdict": "no"}] * 7
    assert hallucination_score(verdicts) == 0.13  # 0.125 rounds half up like Math.round
    assert hallucination_score(verdicts, scale=10) == 1.25
    assert hallucination_score([]) == 0


def test_no_claims_scores_zero():
    judge = llm({"claims": []})
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="template").run(input="q", output="Hello!")
    assert result.score == 0
    assert result.analyze_step_result == {"verdicts": []}
    assert len(judge.calls) == 1  # nothing to analyze
    assert "no claims" in result.reason


def test_empty_output_scores_zero_without_asking():
    judge = llm({})
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="template").run(input="q", output="")
    assert result.score == 0 and judge.calls == []
    assert result.preprocess_step_result == {"claims": []} and result.preprocess_prompt is None
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="none").run(input="q", output="")
    assert result.score == 0 and result.reason is None


def test_llm_mode_defaults_to_llm_reason():
    judge = llm({"reason": "The score is 0 because nothing was said."})
    result = create_hallucination_scorer(judge, context=CONTEXT).run(input="q", output="")
    assert result.score == 0 and result.reason == "The score is 0 because nothing was said."
    assert len(judge.calls) == 1 and result.generate_reason_prompt == prompt_of(judge.requests[0])


def test_empty_context_every_claim_unsupported():
    judge = llm({"claims": ["X happened.", "Y happened."]})
    result = create_hallucination_scorer(judge, scale=10, reason="template").run(input="q", output="X and Y.")
    assert result.score == 10
    assert all(v["verdict"] == "yes" for v in result.analyze_step_result["verdicts"])
    assert "no context" in result.reason and '"X happened."' in result.reason


def test_template_reason_cites_hallucinated_claims():
    judge = llm({"claims": ["Good claim.", "Bad claim."], "verdict": ["no", "yes"]})
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="template").run(
        input="q", output="Good claim. Bad claim.")
    assert result.score == 0.5
    assert result.reason == ('The score is 0.5 because 1 of 2 claims are contradicted by or missing from the '
                             'context: "Bad claim.".')
    assert result.generate_reason_prompt is None


def test_invalid_verdict_is_not_scorable_with_raw_reply():
    judge = llm({"claims": ["A."], "verdict": [{"verdict": "maybe", "reason": "?"}]})
    result = create_hallucination_scorer(judge, context=CONTEXT).run(input="q", output="A.")
    assert result.score is None and not result.scorable
    assert "maybe" in result.raw_reply and "verdict" in result.error
    assert result.judge == "fake-llm"


def test_judge_failure_is_not_scorable_with_raw_reply():
    judge = llm({"claims": JudgeFailure("ran out of tokens", raw='{"claims": ["A", "B')})
    result = create_hallucination_scorer(judge, context=CONTEXT).run(input="q", output="A.")
    assert result.score is None
    assert result.raw_reply == '{"claims": ["A", "B'
    assert "ran out of tokens" in result.error


def test_joint_mode_fixed_count_schema_and_count_check():
    judge = llm({"claims": ["A.", "B."],
                 "verdicts": [{"verdict": "YES", "reason": "r"}, {"verdict": "no", "reason": "r"}]})
    result = create_hallucination_scorer(judge, context=CONTEXT, reason="template", per_claim=False).run(
        input="q", output="A. B.")
    assert result.score == 0.5
    schema = json.loads(judge.requests[1].schema_json)["properties"]["verdicts"]
    assert schema["minItems"] == schema["maxItems"] == 2
    assert schema["items"]["properties"]["verdict"]["enum"] == ["yes", "no"]
    bad = llm({"claims": ["A.", "B."], "verdicts": [{"verdict": "no", "reason": "r"}]})
    result = create_hallucination_scorer(bad, context=CONTEXT, per_claim=False).run(input="q", output="A. B.")
    assert result.score is None and "expected 2" in result.error and result.raw_reply


def test_schemas_are_bounded():
    judge = llm({"claims": ["A."], "verdict": ["no"], "reason": "r"})
    create_hallucination_scorer(judge, context=CONTEXT, reason="llm").run(input="q", output="A.")

    def bounded(schema):
        if schema.get("type") == "string" and "enum" not in schema:
            assert schema["maxLength"] > 0
        if schema.get("type") == "array":
            assert schema["maxItems"] > 0
            bounded(schema["items"])
        for sub in schema.get("properties", {}).values():
            bounded(sub)

    for request in judge.requests:
        bounded(json.loads(request.schema_json))
        assert request.max_new_tokens and request.max_new_tokens < 2000


def test_get_context_wins_sync_and_async():
    seen = []

    def get_context(run, step):
        seen.append((run["output"], step))
        return ["dynamic fact"]

    judge = llm({"claims": ["A."], "verdict": lambda r: "no" if "dynamic fact" in prompt_of(r) else "yes"})
    result = create_hallucination_scorer(judge, context=["static"], get_context=get_context, reason="none").run(
        input="q", output="A.")
    assert result.score == 0 and seen == [("A.", "analyze")]

    async def aget_context(run, step):
        await asyncio.sleep(0)
        return "dynamic fact"

    scorer = create_hallucination_scorer(judge, context=["static"], get_context=aget_context, reason="none")
    assert scorer.run(input="q", output="A.").score == 0

    async def inside_loop():  # a running event loop in the caller's thread
        return scorer.run(input="q", output="A.")

    assert asyncio.run(inside_loop()).score == 0


def test_per_item_context_from_request_context():
    judge = llm({"claims": ["A."], "verdict": lambda r: "no" if "item fact" in prompt_of(r) else "yes"})
    scorer = create_hallucination_scorer(judge, context=["static"], reason="none")
    assert scorer.run(input="q", output="A.", request_context={"context": ["item fact"]}).score == 0
    assert scorer.run(input="q", output="A.", request_context={"context": "item fact"}).score == 0
    assert scorer.run(input="q", output="A.").score == 1


def test_nli_mode_spacy_sentences_and_threshold():
    judge = nli(lambda premise, hyp: 0.9 if "Paris" in hyp else 0.1)
    scorer = create_hallucination_scorer(judge, context=["Paris is the capital of France.", "It has the Louvre."])
    result = scorer.run(input="q", output="Paris is in France. The moon is made of cheese.")
    assert result.preprocess_step_result == {"claims": ["Paris is in France.", "The moon is made of cheese."]}
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["no", "yes"]
    assert result.score == 0.5 and result.judge == "fake-nli"
    assert result.reason.startswith("The score is 0.5 because 1 of 2 claims")  # template by default
    premise = judge.requests[0].premise
    assert premise == "Paris is the capital of France.\nIt has the Louvre."
    strict = create_hallucination_scorer(judge, context=["x"], nli_threshold=0.95)
    assert strict.run(input="q", output="Paris is in France.").score == 1


def test_nli_mode_claims_from_an_llm():
    judge = nli(lambda premise, hyp: 0.9 if hyp == "Claim one." else 0.0)
    claimer = llm({"claims": ["Claim one.", "Claim two."]})
    result = create_hallucination_scorer(judge, context=["c"], claim_model=claimer).run(
        input="q", output="Claim one. Claim two.")
    assert result.score == 0.5 and result.extra["judges"]["preprocess"] == "fake-llm"


def test_nli_failure_is_not_scorable():
    judge = nli(lambda p, h: 0.5)
    judge.respond = lambda r: JudgeFailure("premise too long", raw=None)
    result = create_hallucination_scorer(judge, context=["c"]).run(input="q", output="A claim.")
    assert result.score is None and "premise too long" in result.error


def test_options_merge_reference_style():
    judge = llm({"claims": ["A."]})
    scorer = create_hallucination_scorer(judge, options={"scale": 5, "reason": "none"})
    assert scorer.run(input="q", output="A.").score == 5


def test_extract_tool_results_shapes():
    output = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": {"format": 2, "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1",
                                                           "toolName": "weather", "args": {"city": "Oslo"},
                                                           "result": {"temp": 3}}},
            {"type": "text", "text": "It is 3 degrees."}],
            "toolInvocations": [{"state": "result", "toolCallId": "c1", "toolName": "weather",
                                 "args": {"city": "Oslo"}, "result": {"temp": 3}}]}},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c2", "toolName": "news",
                                      "output": "headline"}]},
        {"role": "assistant", "parts": [{"type": "tool-stocks", "state": "output-available", "toolCallId": "c3",
                                         "input": {"s": "X"}, "output": 42},
                                        {"type": "tool-invocation", "toolInvocation": {"state": "call",
                                                                                        "toolCallId": "c4",
                                                                                        "toolName": "pending"}}]},
    ]
    found = extract_tool_results(output)
    assert [(t["toolName"], t["result"]) for t in found] == [("weather", {"temp": 3}), ("news", "headline"),
                                                             ("stocks", 42)]
    assert extract_tool_results("plain text") == []
    assert extract_tool_results({"messages": output})[0]["toolCallId"] == "c1"


def test_tool_results_as_context():
    output = [{"role": "assistant", "toolInvocations": [
        {"state": "result", "toolCallId": "1", "toolName": "kb", "result": "Oslo is 3 degrees."}],
        "content": "Oslo is 3 degrees."}]

    def get_context(run, step):
        return [json.dumps({"tool": t["toolName"], "result": t["result"]}) for t in extract_tool_results(run["output"])]

    judge = llm({"claims": ["Oslo is 3 degrees."], "verdict": lambda r: "no" if "kb" in prompt_of(r) else "yes"})
    result = create_hallucination_scorer(judge, get_context=get_context, reason="none").run(input="q", output=output)
    assert result.score == 0 and "Oslo is 3 degrees." in result.preprocess_prompt


def test_bad_reason_mode_and_wrong_judge_kind():
    with pytest.raises(ValueError):
        create_hallucination_scorer(llm({}), reason="poem")
    from scripted_judges import embedder
    with pytest.raises(TypeError):
        create_hallucination_scorer(embedder({}))


def test_end_to_end_embedded_default():
    """model=None: the shipped NLI judge when it is there, else the default LLM judge."""
    from evallocal.models import ModelError

    try:
        scorer = create_hallucination_scorer(context=["Paris is the capital of France."], reason="template")
        if hasattr(scorer.judge, "load"):
            scorer.judge.load()
    except (ModelError, ImportError) as exc:
        pytest.skip(f"no default hallucination judge available: {exc}")
    result = scorer.run(input="q", output="Paris is the capital of France.")
    assert result.scorable, (result.error, result.raw_reply)
    assert result.judge in ("evallocal-nli-minilm-l6", "smollm2-135m-instruct")
    assert 0 <= result.score <= 1 and result.reason.startswith("The score is")
    if result.judge == "evallocal-nli-minilm-l6":
        assert result.score == 0
        assert scorer.run(input="q", output="The moon is made of green cheese.").score == 1
