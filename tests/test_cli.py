"""`evallocal score` end to end: order, field mapping, malformed lines, exit status, help."""

import json
import subprocess
import sys

import pytest

from evallocal.cli import main

GOOD = {"input": "apples, oranges, and bananas", "output": "apples and bananas"}


def write_lines(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bad_lines_are_reported_and_never_cost_other_lines(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    write_lines(data, [
        GOOD,
        "{not json",
        {"input": "q"},  # missing output
        {"input": 42, "output": "x"},  # wrong type
        "[1, 2]",  # not an object
        {"input": "The quick brown fox jumps over the lazy dog", "output": "The fox jumps over the dog", "id": "fox"},
    ])
    out = tmp_path / "out.jsonl"
    code = main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet"])
    assert code == 1
    rows = read_jsonl(out)
    assert [row["line"] for row in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[0]["results"]["completeness-scorer"]["score"] == 0.75
    assert rows[5]["id"] == "fox" and rows[5]["results"]["completeness-scorer"]["score"] == 0.625
    assert "invalid JSON" in rows[1]["error"]
    assert "missing field 'output'" in rows[2]["error"]
    assert "must be a string" in rows[3]["error"]
    assert "expected a JSON object" in rows[4]["error"]
    errors = read_jsonl(tmp_path / "out.errors.jsonl")
    assert [e["line"] for e in errors] == [2, 3, 4, 5]
    printed = capsys.readouterr().out
    assert "malformed: 4" in printed and "line 2:" in printed and "completeness-scorer" in printed


def test_field_names_are_configurable_and_exit_zero(tmp_path):
    data = tmp_path / "data.jsonl"
    write_lines(data, [{"question": GOOD["input"], "answer": GOOD["output"]}])
    out = tmp_path / "out.jsonl"
    code = main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet",
                 "--input-field", "question", "--output-field", "answer"])
    assert code == 0
    assert read_jsonl(out)[0]["results"]["completeness-scorer"]["score"] == 0.75


def test_subprocess_exit_status_and_summary(tmp_path):
    data = tmp_path / "data.jsonl"
    write_lines(data, [GOOD, "oops"])
    out = tmp_path / "out.jsonl"
    proc = subprocess.run([sys.executable, "-m", "evallocal", "score", str(data), "--scorer", "completeness",
                           "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "completeness-scorer" in proc.stdout and "malformed: 1" in proc.stdout
    assert "item/s" in proc.stderr  # the progress bar shows the rate


def test_help_is_complete():
    proc = subprocess.run([sys.executable, "-m", "evallocal", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "score" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "evallocal", "score", "--help"], capture_output=True, text=True)
    for option in ("--scorer", "--out", "--input-field", "--output-field", "--quiet", "Exit status"):
        assert option in proc.stdout


def test_missing_input_file_is_a_clear_error(tmp_path, capsys):
    code = main(["score", str(tmp_path / "nope.jsonl"), "--scorer", "completeness", "--out", str(tmp_path / "o.jsonl")])
    assert code == 2
    assert "input file not found" in capsys.readouterr().err


@pytest.mark.parametrize("chunk_size", ["1", "3"])
def test_chunking_does_not_change_results(tmp_path, chunk_size):
    data = tmp_path / "data.jsonl"
    write_lines(data, [GOOD, "bad", GOOD, GOOD])
    out = tmp_path / "out.jsonl"
    main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet", "--chunk-size", chunk_size])
    assert [row.get("results", {}).get("completeness-scorer", {}).get("score") for row in read_jsonl(out)] == \
        [0.75, None, 0.75, 0.75]
