"""The structured-generation backend: schema budgets, and SmolLM2's constrained-output promise."""

import json
import socket
import time

import pytest

from evallocal.judges.structured import SchemaError, _check, token_budget, validate
from evallocal.types import GenerateRequest, JudgeFailure

from script_loader import load_script



def test_budget_covers_the_largest_value_of_a_bounded_schema():
    schema = {"type": "object", "properties": {
        "verdict": {"enum": ["yes", "no"]},
        "claims": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 10}},
        "n": {"type": "integer"}}}
    biggest = {"verdict": "yes", "claims": ["x" * 10] * 3, "n": -1234567890}
    # every character may be one token in the worst case
    assert token_budget(schema) >= len(json.dumps(biggest, separators=(",", ":")))
    assert token_budget({"type": "string", "maxLength": 5}) < token_budget({"type": "string", "maxLength": 50})


def test_fallback_checker_agrees_with_jsonschema():
    schema = {"type": "object", "required": ["a"], "additionalProperties": False,
              "properties": {"a": {"enum": ["yes", "no"]}, "b": {"type": "array", "maxItems": 1,
                                                                  "items": {"type": "integer"}}}}
    good, bad = [{"a": "yes", "b": [1]}, {"a": "no"}], [{"a": "maybe"}, {"b": []}, {"a": "yes", "c": 1},
                                                         {"a": "yes", "b": [1, 2]}, {"a": "yes", "b": [True]}]
    for value in good:
        validate(value, schema)
        _check(value, schema, "$")
    for value in bad:
        with pytest.raises(SchemaError):
            validate(value, schema)
        with pytest.raises(SchemaError):
            _check(value, schema, "$")


# --- SmolLM2-135M-Instruct on CPU (slow) --------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    """The shared default LLM judge, loaded with every socket connection refused."""
    import torch

    from evallocal.judges.defaults import default_llm_judge

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a CPU shared with other jobs, one thread is several times faster
    original = socket.socket.connect

    def refuse(self, address, *args, **kwargs):
        raise AssertionError(f"network connection attempted to {address!r}")

    socket.socket.connect = refuse
    try:
        judge = default_llm_judge().load()
        yield judge
    finally:
        socket.socket.connect = original
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_200_structured_requests_all_parse_and_validate(smollm2):
    requests = load_script("bench_judge").structured_requests(200, seed=11)
    assert len({r.schema_json for r in requests}) == 8
    started = time.perf_counter()
    answers = smollm2.answer(requests)
    elapsed = time.perf_counter() - started
    failures = [a for a in answers if isinstance(a, JudgeFailure)]
    assert not failures, failures[:3]
    for request, answer in zip(requests, answers):
        validate(answer, request.schema)
    print(f"\nSmolLM2-135M: 200/200 structured answers valid in {elapsed:.1f}s ({200 / elapsed:.2f} req/s)")


@pytest.mark.slow
def test_json_cut_by_the_budget_is_a_failure_with_the_raw_text(smollm2):
    schema = {"type": "object", "properties": {"story": {"type": "string", "minLength": 40, "maxLength": 80}},
              "required": ["story"]}
    request = GenerateRequest.build([("user", "Tell a short story about a fox.")], schema, max_new_tokens=3)
    ok = GenerateRequest.build([("user", "Is water wet? Answer yes or no.")],
                               {"type": "object", "properties": {"a": {"enum": ["yes", "no"]}}, "required": ["a"]})
    cut, fine = smollm2.answer([request, ok])
    assert isinstance(cut, JudgeFailure) and "did not finish within 6 new tokens" in cut.error
    assert cut.raw and cut.raw.startswith("{")
    assert fine in ({"a": "yes"}, {"a": "no"})
