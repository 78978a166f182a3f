"""The judge cache: exact round trips, hits without judge work, precise invalidation, corruption."""

import math

import numpy as np
import pytest

from evallocal.cache import (CacheError, JudgeCache, clear_cache, decode, default_cache_dir, encode,
                             request_key)
from evallocal.judges.base import Judge
from evallocal.runner import run_scorers
from evallocal.scorers.base import ScoreItem
from evallocal.types import EmbedRequest, GenerateRequest, JudgeFailure, ParsedText, Token

from fakes import EchoJudge, TwoStepScorer


class HashedJudge(Judge):
    """A judge whose identity carries a weights hash (like the model-backed judges)."""

    kinds = frozenset({"generate"})

    def __init__(self, weights="aaa", name="hashed"):
        self.weights = weights
        self.name = name
        self.calls = []

    def _answer(self, requests):
        self.calls.append(list(requests))
        return [{"echo": r.messages[-1][1], "w": self.weights} for r in requests]

    def describe(self):
        return {**super().describe(), "weights_sha256": self.weights, "batch_size": 8}


def ask(prompt):
    return GenerateRequest.build([{"role": "user", "content": prompt}], {"type": "object"})


@pytest.mark.parametrize("value", [
    ParsedText(tokens=(Token("Cats", "NOUN", "cat"),), noun_phrases=("Cats",), topics=(), sentences=("Cats.",)),
    {"claims": ["a", "b"], "n": 3, "p": 0.1 + 0.2, "nested": {"t": (1, 2.5, None)}},
    (0.1, -2.0, 1e-300),
    {1: "int key", "__x": "dunder key"},
    [float("inf"), -float("inf")],
    "plain",
])
def test_codec_round_trips_exactly(value):
    back = decode(encode(value))
    assert back == value and type(back) is type(value)


def test_codec_numpy_and_nan():
    array = np.array([[0.1, 0.2]], dtype=np.float32)
    back = decode(encode(array))
    assert back.dtype == np.float32 and back.shape == (1, 2) and (back == array).all()
    assert math.isnan(decode(encode(float("nan"))))
    assert decode(encode(np.float32(0.5))) == np.float32(0.5)


def test_rerun_asks_the_judge_nothing(tmp_path):
    judge = EchoJudge()
    items = [ScoreItem(f"question {i}", f"answer {i}" * i, run_id=str(i)) for i in range(5)]
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        first = run_scorers(items, [TwoStepScorer(judge)], wrap_judge=cache.wrap)
        calls = list(judge.calls)
        second = run_scorers(items, [TwoStepScorer(judge)], wrap_judge=cache.wrap)
        assert judge.calls == calls  # no new judge work
        assert cache.hits == 10 and cache.misses == 10
    assert [[r.score for r in row] for row in first] == [[r.score for r in row] for row in second]
    # a new process (a new cache object) sees the same answers
    fresh = EchoJudge()
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        run_scorers(items, [TwoStepScorer(fresh)], wrap_judge=cache.wrap)
    assert fresh.calls == []


def test_failures_are_not_cached_and_duplicates_are_asked_once(tmp_path):
    judge = EchoJudge(fail_on="bad")
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        wrapped = cache.wrap(judge)
        answers = wrapped.answer([EmbedRequest("bad one"), EmbedRequest("good"), EmbedRequest("good")])
        assert isinstance(answers[0], JudgeFailure) and answers[1:] == [4, 4]
        assert judge.calls == [2]  # "good" asked once
        wrapped.answer([EmbedRequest("bad one"), EmbedRequest("good")])
        assert judge.calls == [2, 1]  # the failure is asked again, the answer is not
        assert cache.stats()["entries"] == 1


def test_one_wrapper_per_judge_object(tmp_path):
    a, b = EchoJudge(), EchoJudge()
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        assert cache.wrap(a) is cache.wrap(a)
        assert cache.wrap(a) is not cache.wrap(b)
        assert cache.wrap(cache.wrap(a)) is cache.wrap(a)
        # two scorers sharing one judge still meet in one batch per round
        items = [ScoreItem("q", "a", run_id="1"), ScoreItem("qq", "aa", run_id="2")]
        run_scorers(items, [TwoStepScorer(a), TwoStepScorer(a)], wrap_judge=cache.wrap)
        assert a.calls == [2, 2]  # round 1: two distinct inputs; round 2: two distinct outputs


def test_changing_one_prompt_or_the_model_recomputes_exactly_that(tmp_path):
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        judge = HashedJudge("aaa")
        wrapped = cache.wrap(judge)
        wrapped.answer([ask("p1"), ask("p2"), ask("p3")])
        wrapped.answer([ask("p1"), ask("p2 changed"), ask("p3")])
        assert [len(c) for c in judge.calls] == [3, 1] and judge.calls[1][0].messages[-1][1] == "p2 changed"
        other_weights = HashedJudge("bbb")
        cache.wrap(other_weights).answer([ask("p1")])
        assert len(other_weights.calls) == 1  # a different model file: recomputed
        other_batch = HashedJudge("aaa")
        other_batch.describe = lambda: {"name": "hashed", "kinds": ["generate"], "weights_sha256": "aaa", "batch_size": 64}
        cache.wrap(other_batch).answer([ask("p1")])
        assert other_batch.calls == []  # batch size does not change answers: reused


def test_key_covers_kind_and_every_field():
    ident = '{"name":"x"}'
    assert request_key(ident, EmbedRequest("a")) != request_key(ident, EmbedRequest("b"))
    base = GenerateRequest.build([{"role": "user", "content": "a"}], {"type": "object"}, 10)
    assert request_key(ident, base) != request_key(ident, GenerateRequest(base.messages, base.schema_json, 11))
    assert request_key(ident, base) != request_key('{"name":"y"}', base)


def test_corrupted_cache_is_a_clear_error_with_the_way_out(tmp_path):
    path = tmp_path / "judge-cache.sqlite3"
    path.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(CacheError) as error:
        JudgeCache(path)
    message = str(error.value)
    assert str(path) in message and "evallocal cache clear" in message and "--no-cache" in message
    assert clear_cache(path) == [path] and not path.exists()
    JudgeCache(path).close()  # usable again


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("EVALLOCAL_CACHE")
    assert default_cache_dir() == tmp_path / "xdg" / "evallocal"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "evallocal"


def test_wal_mode(tmp_path):
    with JudgeCache(tmp_path / "c.sqlite3") as cache:
        assert cache.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cli_stats_and_clear(tmp_path, monkeypatch, capsys):
    from evallocal.cli import main

    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path))
    with JudgeCache() as cache:
        cache.wrap(EchoJudge()).answer([EmbedRequest("x"), EmbedRequest("yy")])
    assert main(["cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "entries: 2" in out and "echo (embed): 2" in out
    assert main(["cache", "clear"]) == 0
    assert not (tmp_path / "judge-cache.sqlite3").exists()
    assert main(["cache", "stats"]) == 0 and "no cache" in capsys.readouterr().out


def test_cli_rerun_does_no_judge_work(tmp_path, monkeypatch, capsys):
    from evallocal.cli import main

    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "apples, oranges, and bananas", "output": "apples and bananas"}\n'
                    '{"input": "The quick brown fox", "output": "The fox"}\n')
    command = ["score", str(data), "--scorer", "completeness", "--quiet"]
    assert main(command + ["--out", str(tmp_path / "a.jsonl")]) == 0
    assert "0 answers reused, 4 computed" in capsys.readouterr().out
    assert main(command + ["--out", str(tmp_path / "b.jsonl")]) == 0
    assert "4 answers reused, 0 computed" in capsys.readouterr().out
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert main(command + ["--out", str(tmp_path / "c.jsonl"), "--no-cache"]) == 0
    assert "judge cache" not in capsys.readouterr().out
