"""`evallocal score` under stress: kill -9 and resume, a corrupted cache, unwritable outputs,
malformed rows in every input format."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evallocal.cli import main
from evallocal.formats import read_results
from evallocal.scoring_run import RunError, ScoringRun

from fakes import EchoJudge, TwoStepScorer

REPO = Path(__file__).resolve().parent.parent
WORDS = ("river bridge engine planet garden museum harbour village market school forest island "
         "build visit measure explain describe protect France Spain Peru Kenya old new busy tall").split()


def synthetic_rows(n, seed=11):
    rng = random.Random(seed)
    for i in range(n):
        yield {"id": f"r{i}", "input": " ".join(rng.choices(WORDS, k=6)) + "?",
               "output": " ".join(rng.choices(WORDS, k=7)) + "."}


def score_command(data, out, *extra):
    return [sys.executable, "-m", "evallocal", "score", str(data), "--scorer", "completeness", "--out", str(out),
            "--quiet", *extra]


def env_for(tmp_path):
    return {**os.environ, "EVALLOCAL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}


def count_lines(path):
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0


def test_ctrl_c_then_kill_9_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path):
    rows = 1500
    data = tmp_path / "data.jsonl"
    lines = [json.dumps(row) for row in synthetic_rows(rows)]
    lines[100] = "{torn"  # one malformed line too
    data.write_text("\n".join(lines) + "\n")
    env = env_for(tmp_path)
    reference = tmp_path / "reference.jsonl"
    subprocess.run(score_command(data, reference, "--chunk-size", "20", "--no-cache"), env=env, check=False,
                   capture_output=True, timeout=900)
    assert count_lines(reference) == rows

    out = tmp_path / "out.jsonl"
    command = score_command(data, out, "--chunk-size", "20", "--no-cache")

    def start_and_stop_after(lines, sig):
        # a shell's background job ignores SIGINT, and children inherit that: give the run the default
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 600
        while count_lines(out) < lines and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=120)
        written = count_lines(out)
        assert 0 < written < rows, f"the run was not stopped mid-way ({written} lines)"
        return proc.returncode, stderr, written

    # Ctrl-C: a clean stop that says how to go on
    code, stderr, first = start_and_stop_after(200, signal.SIGINT)
    assert code == 130 and "run the same command again" in stderr
    # kill -9 of the resumed run
    code, _, second = start_and_stop_after(first + 200, signal.SIGKILL)
    assert code == -signal.SIGKILL and second > first
    manifest = json.loads(out.with_name("out.manifest.json").read_text())
    assert manifest["run"]["status"] == "running"

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr  # 1: the malformed line
    assert "resumed after" in done.stdout
    assert out.read_bytes() == reference.read_bytes()
    assert out.with_name("out.errors.jsonl").read_bytes() == reference.with_name("reference.errors.jsonl").read_bytes()


def test_corrupted_cache_is_a_clear_error_before_any_work(tmp_path, capsys, monkeypatch):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "judge-cache.sqlite3").write_bytes(os.urandom(8192))
    monkeypatch.setenv("EVALLOCAL_CACHE", str(cache_dir))
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "a b", "output": "a"}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert str(cache_dir / "judge-cache.sqlite3") in error
    assert "evallocal cache clear" in error and "--no-cache" in error
    assert not out.exists()
    # both ways out work
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet", "--no-cache"]) == 0
    assert main(["cache", "clear"]) == 0
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"]) == 0


@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_unwritable_output_fails_before_any_judge_work(tmp_path, capsys, where):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "q", "output": "a"}) + "\n")
    out = tmp_path / "no" / "such" / "dir" / "r.jsonl" if where == "missing-dir" else tmp_path / "adir.jsonl"
    if where == "a-directory":
        out.mkdir()
    judge = EchoJudge()
    with pytest.raises(RunError, match="cannot write"):
        ScoringRun(str(data), [TwoStepScorer(judge)], str(out)).execute()
    assert judge.calls == []
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet", "--no-cache"]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_unwritable_errors_file_fails_early_too(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "q", "output": "a"}) + "\n")
    judge = EchoJudge()
    with pytest.raises(RunError, match="--errors"):
        ScoringRun(str(data), [TwoStepScorer(judge)], str(tmp_path / "r.jsonl"),
                   errors=str(tmp_path / "nope" / "e.jsonl")).execute()
    assert judge.calls == []


GOOD = {"id": "good", "input": "apples, oranges, and bananas", "output": "apples and bananas"}


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_malformed_rows_are_isolated_in_every_format(tmp_path, kind, monkeypatch):
    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "cache"))
    data = tmp_path / f"d.{kind}"
    if kind == "jsonl":
        data.write_text("\n".join([json.dumps(GOOD), "{bad", json.dumps({"input": 3, "output": "x"}),
                                   json.dumps({**GOOD, "id": "good2"})]) + "\n")
    elif kind == "csv":
        data.write_text('id,input,output\ngood,"apples, oranges, and bananas",apples and bananas\n'
                        'bad,"only two"\nbad2,a,b,c,d\ngood2,"apples, oranges, and bananas",apples and bananas\n')
    else:
        schema = pa.schema([("id", pa.string()), ("input", pa.string()), ("output", pa.string())])
        pq.write_table(pa.Table.from_pylist([GOOD, {"id": "bad", "input": None, "output": "x"},
                                             {"id": "bad2", "input": "q", "output": None}, {**GOOD, "id": "good2"}],
                                            schema=schema), data)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"]) == 1
    lines = list(read_results(out))
    assert [line["line"] for line in lines] == [1, 2, 3, 4]
    assert [line["results"]["completeness-scorer"]["score"] for line in (lines[0], lines[3])] == [0.75, 0.75]
    assert "error" in lines[1] and "error" in lines[2]
    errors = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == [2, 3]


def test_cli_refuses_to_resume_a_different_run_and_restart_starts_over(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"]) == 0
    manifest_file = tmp_path / "out.manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["run"] = {"status": "running"}  # as if it had been killed
    manifest_file.write_text(json.dumps(manifest))
    data.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "more"}) + "\n")
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "cannot be resumed" in error and "input.sha256" in error and "--restart" in error
    assert len(out.read_text().splitlines()) == 1  # untouched
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet", "--restart"]) == 0
    assert len(out.read_text().splitlines()) == 2
