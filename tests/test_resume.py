"""Resumable runs: an interrupted run, run again, ends byte-identical to an uninterrupted one."""

import json

import pytest

from evallocal.cache import JudgeCache
from evallocal.judges.base import Judge
from evallocal.manifest import load_manifest
from evallocal.scoring_run import RunError, ScoringRun, run_paths
from evallocal.types import EmbedRequest

from fakes import EchoJudge, TwoStepScorer


class InterruptingJudge(Judge):
    """Answers like EchoJudge; raises KeyboardInterrupt (like Ctrl-C) on its n-th call."""

    name = "echo"
    kinds = frozenset({EmbedRequest.kind})

    def __init__(self, interrupt_on_call: int | None = None):
        self.calls = 0
        self.interrupt_on_call = interrupt_on_call

    def _answer(self, requests):
        self.calls += 1
        if self.calls == self.interrupt_on_call:
            raise KeyboardInterrupt
        return [len(r.text) for r in requests]


def write_data(path, n=23, bad=(5, 17)):
    lines = []
    for i in range(1, n + 1):
        lines.append("{broken" if i in bad else json.dumps({"id": f"i{i}", "input": "q" * i, "output": "a" * (i % 7)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def run(data, out, judge, **options):
    options.setdefault("chunk_size", 4)
    return ScoringRun(str(data), [TwoStepScorer(judge)], str(out), **options).execute()


@pytest.fixture
def reference(tmp_path):
    data = write_data(tmp_path / "data.jsonl")
    out = tmp_path / "reference.jsonl"
    run(data, out, InterruptingJudge())
    return data, out


@pytest.mark.parametrize("interrupt_on_call", [1, 2, 5, 9])
def test_interrupted_run_resumes_to_the_same_bytes(tmp_path, reference, interrupt_on_call):
    data, expected = reference
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(data, out, InterruptingJudge(interrupt_on_call))
    assert load_manifest(run_paths(out).manifest)["run"]["status"] == "running"
    judge = InterruptingJudge()
    summary = run(data, out, judge)
    assert out.read_bytes() == expected.read_bytes()
    assert summary.lines == 23 and summary.malformed_count() == 2  # totals include the kept lines
    errors = [json.loads(line) for line in run_paths(out).errors.read_text().splitlines()]
    assert [e["line"] for e in errors] == [5, 17]
    assert load_manifest(run_paths(out).manifest)["run"]["status"] == "complete"


def test_torn_tail_and_partial_chunk_are_redone(tmp_path, reference):
    data, expected = reference
    out = tmp_path / "out.jsonl"
    lines = expected.read_bytes().splitlines(keepends=True)
    with pytest.raises(KeyboardInterrupt):
        run(data, out, InterruptingJudge(3))
    # as if killed while writing: two whole chunks, one line of the third and half a line
    out.write_bytes(b"".join(lines[:9]) + lines[9][:10])
    judge = InterruptingJudge()
    run(data, out, judge)
    assert out.read_bytes() == expected.read_bytes()
    assert judge.calls == 2 * 4  # chunks 3..6 (records 9-23, minus malformed), two rounds each


def test_a_different_manifest_is_refused_with_the_way_out(tmp_path, reference):
    data, _ = reference
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(data, out, InterruptingJudge(3))
    other = write_data(tmp_path / "other.jsonl", n=30)
    with pytest.raises(RunError) as error:
        run(other, out, InterruptingJudge())
    message = str(error.value)
    assert "input.sha256" in message and "--restart" in message and "new --out" in message
    with pytest.raises(RunError, match="settings.chunk_size"):
        run(data, out, InterruptingJudge(), chunk_size=5)
    run(other, out, InterruptingJudge(), restart=True)  # --restart starts over
    assert len(out.read_text().splitlines()) == 30


def test_a_finished_run_is_overwritten_by_a_new_one(tmp_path, reference):
    data, expected = reference
    out = tmp_path / "out.jsonl"
    run(data, out, InterruptingJudge())
    other = write_data(tmp_path / "other.jsonl", n=3, bad=())
    run(other, out, InterruptingJudge())
    assert len(out.read_text().splitlines()) == 3


def test_parquet_output_resumes_too(tmp_path, reference):
    from evallocal.formats import read_results

    data, expected = reference
    out = tmp_path / "out.parquet"
    with pytest.raises(KeyboardInterrupt):
        run(data, out, InterruptingJudge(4))
    assert not out.exists() and run_paths(out).work.exists()
    run(data, out, InterruptingJudge())
    assert not run_paths(out).work.exists()
    expected_lines = [json.loads(line) for line in expected.read_text().splitlines()]
    assert list(read_results(out)) == expected_lines


def test_resume_with_cache_does_only_the_missing_work(tmp_path, reference):
    data, expected = reference
    out = tmp_path / "out.jsonl"
    with JudgeCache(tmp_path / "cache.sqlite3") as cache:
        with pytest.raises(KeyboardInterrupt):
            run(data, out, InterruptingJudge(5), cache=cache)
        judge = EchoJudge()
        run(data, out, judge, cache=cache)
    assert out.read_bytes() == expected.read_bytes()
    with JudgeCache(tmp_path / "cache.sqlite3") as cache:
        again = EchoJudge()
        run(data, tmp_path / "again.jsonl", again, cache=cache)
        assert again.calls == []  # everything is cached now
    assert (tmp_path / "again.jsonl").read_bytes() == expected.read_bytes()
