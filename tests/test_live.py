import asyncio
import json
import threading
import time

import pytest

from evallocal.live import LiveScorer, score_calls
from evallocal.scorers.bias import create_bias_scorer
from evallocal.scorers.hallucination import create_hallucination_scorer
from scripted_judges import llm


def _bias():
    judge = llm({"opinions": ["o."], "result": lambda r: "yes"})
    return create_bias_scorer(judge, reason="template"), judge


def test_scores_calls_in_batches_and_returns_unchanged():
    scorer, judge = _bias()
    records = []

    @score_calls([scorer], sink=records.append, batch_size=8, flush_interval=60)
    def answer(question):
        return f"answer to {question}"

    values = [answer(f"q{i}") for i in range(20)]
    assert values == [f"answer to q{i}" for i in range(20)]
    assert answer.flush(timeout=30)
    assert len(records) == 20 and all(r["result"]["score"] == 1 for r in records)
    assert sorted(r["call"] for r in records) == list(range(1, 21))
    assert records[0]["input"] == "q0" and records[0]["output"] == "answer to q0"
    # batched across calls: 2 judge rounds per batch, batches of <= 8 calls (not one per call)
    assert len(judge.calls) <= 2 * 3 + 2 and max(len(c) for c in judge.calls) > 1
    answer.close()


def test_deterministic_sampling():
    def run(seed):
        scorer, _ = _bias()
        records = []
        fn = score_calls([scorer], sample_rate=0.3, sink=records.append, seed=seed)(lambda x: x)
        for i in range(50):
            fn(f"text {i}")
        fn.close(timeout=30)
        return sorted(r["call"] for r in records)

    first = run(7)
    assert first == run(7) and 5 < len(first) < 30
    assert first != run(8)


def test_never_fails_the_call_and_records_errors(caplog):
    class Boom:
        id = "boom-scorer"

        def steps(self, item):
            raise RuntimeError("scorer bug")

        def not_scorable(self, item, exc):
            raise RuntimeError("and the fallback too")

    records = []
    fn = score_calls([Boom()], sink=records.append)(lambda x: x.upper())
    assert fn("abc") == "ABC"
    assert fn.flush(timeout=30)
    assert records and "error" in records[0] and fn.stats["errors"] == 1
    fn.close()


def test_wrapped_exception_passes_through_unscored():
    scorer, judge = _bias()
    records = []

    @score_calls([scorer], sink=records.append)
    def fails(x):
        raise KeyError(x)

    with pytest.raises(KeyError):
        fails("a")
    fails.flush(timeout=10)
    assert records == [] and judge.calls == []
    fails.close()


def test_does_not_slow_the_call():
    gate = threading.Event()
    judge = llm({"opinions": lambda r: gate.wait(10) and ["o."], "result": lambda r: "no"})
    scorer = create_bias_scorer(judge, reason="none")
    records = []
    fn = score_calls([scorer], sink=records.append, batch_size=1, flush_interval=0)(lambda x: x)
    started = time.perf_counter()
    for i in range(50):
        fn(f"x{i}")
    assert time.perf_counter() - started < 0.5  # the judge is blocked; the calls are not
    gate.set()
    assert fn.flush(timeout=30) and len(records) == 50
    fn.close()


def test_jsonl_sink_and_close_flushes(tmp_path):
    scorer, _ = _bias()
    path = tmp_path / "scores.jsonl"
    fn = score_calls([scorer], sink=str(path), batch_size=100, flush_interval=60)(lambda q: "It is " + q)
    for i in range(5):
        fn(f"x{i}")
    assert fn.close(timeout=30)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 5 and lines[0]["scorer"] == "bias-scorer"
    assert fn("after close") == "It is after close"  # still runs, no longer scored


def test_async_function_and_request_context():
    judge = llm({"claims": ["c."], "verdict": lambda r: "no" if "retrieved" in r.messages[-1][1] else "yes"})
    scorer = create_hallucination_scorer(judge, reason="none")
    live = LiveScorer([scorer], request_context_from=lambda args, kwargs, value: {"context": ["retrieved fact"]})
    records = []
    live._sink = records.append

    @live.wrap
    async def agent(question):
        await asyncio.sleep(0)
        return "c."

    assert asyncio.run(agent("q")) == "c."
    assert live.flush(timeout=30)
    assert records[0]["result"]["score"] == 0
    live.close()


def test_flush_interval_scores_without_flush():
    scorer, _ = _bias()
    records = []
    fn = score_calls([scorer], sink=records.append, batch_size=100, flush_interval=0.2)(lambda x: x)
    fn("a")
    deadline = time.time() + 10
    while not records and time.time() < deadline:
        time.sleep(0.05)
    assert len(records) == 1
    fn.close()
