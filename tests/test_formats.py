"""Input formats (JSONL, CSV, Parquet, iterables) and output formats (JSONL, Parquet)."""

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evallocal.formats import (FormatError, count_records, detect_format, iter_records, read_csv, read_parquet,
                               read_results)
from evallocal.records import FieldMap, to_item
from evallocal.scoring_run import ScoringRun

from fakes import EchoJudge, TwoStepScorer

ROWS = [
    {"id": "a", "input": "What is up?", "output": "The sky.", "context": ["Sky is up."]},
    {"id": "b", "input": "Name a fruit", "output": "Apple, I think", "context": None},
    {"id": "c", "input": "Longer question here", "output": "ok"},
]


def write_csv(path, rows, header=("id", "input", "output", "context")):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
    return path


def csv_rows():
    return [[r["id"], r["input"], r["output"], json.dumps(r["context"]) if r.get("context") else ""] for r in ROWS]


def write_parquet(path, rows, batch=2):
    schema = pa.schema([("id", pa.string()), ("input", pa.string()), ("output", pa.string()),
                        ("context", pa.list_(pa.string()))])
    with pq.ParquetWriter(str(path), schema) as writer:
        for start in range(0, len(rows), batch):
            writer.write_table(pa.Table.from_pylist(rows[start:start + batch], schema=schema))
    return path


def items(records):
    return [to_item(r, FieldMap()) for r in records]


def test_csv_parquet_iterable_read_the_same_items(tmp_path):
    from_csv = items(read_csv(write_csv(tmp_path / "d.csv", csv_rows())))
    from_parquet = items(read_parquet(write_parquet(tmp_path / "d.parquet", ROWS), batch_rows=2))
    from_iterable = items(iter_records(iter(ROWS)))
    for got in (from_csv, from_parquet):
        assert got == from_iterable
    assert from_csv[0].request_context == {"context": ["Sky is up."]}
    assert from_csv[1].request_context is None


def test_malformed_csv_rows_are_isolated(tmp_path):
    path = write_csv(tmp_path / "d.csv", [["x", "q", "a", ""], ["too", "few"], ["y", "q2", "a2", "", "extra"],
                                          ["z", "q3", "", ""]])
    records = list(read_csv(path))
    assert [r.line for r in records] == [1, 2, 3, 4]
    assert records[0].error is None and records[3].error is None
    assert "row 2: expected 4 cells" in records[1].error and "got 2" in records[1].error
    assert "row 3" in records[2].error
    # an empty output cell is an empty answer; an empty context cell is no context
    assert to_item(records[3], FieldMap()).output == "" and to_item(records[3], FieldMap()).request_context is None


def test_malformed_parquet_rows_are_isolated(tmp_path):
    rows = [dict(ROWS[0]), {"id": "n", "input": None, "output": "x", "context": None}, dict(ROWS[2])]
    records = list(read_parquet(write_parquet(tmp_path / "d.parquet", rows)))
    assert [r.line for r in records] == [1, 2, 3]
    with pytest.raises(ValueError, match="row 2: missing field 'input'"):
        to_item(records[1], FieldMap())
    assert to_item(records[2], FieldMap()).run_id == "c"


def test_iterable_rows_that_are_not_dicts():
    records = list(iter_records([ROWS[0], "nope", 3]))
    assert records[0].error is None
    assert records[1].error == "row 2: expected a dict, got str"


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_scoring_any_input_gives_the_same_results(tmp_path, kind):
    if kind == "jsonl":
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + "{bad\n")
    elif kind == "csv":
        data = write_csv(tmp_path / "d.csv", csv_rows() + [["bad", "row"]])
    else:
        data = write_parquet(tmp_path / "d.parquet", ROWS + [{"id": "bad", "input": None, "output": None}])
    out = tmp_path / "out.jsonl"
    summary = ScoringRun(str(data), [TwoStepScorer(EchoJudge())], str(out), chunk_size=2).execute()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line.get("id") for line in lines[:3]] == ["a", "b", "c"]
    assert [line["results"]["two-step"]["score"] for line in lines[:3]] == [8 / 19, 14 / 26, 2 / 22]
    assert "error" in lines[3] and summary.malformed_count() == 1
    assert count_records(data, kind) == 4


def test_python_iterable_input(tmp_path):
    out = tmp_path / "out.jsonl"
    summary = ScoringRun(iter(ROWS), [TwoStepScorer(EchoJudge())], str(out)).execute()
    assert summary.lines == 3 and len(out.read_text().splitlines()) == 3


def test_parquet_output_round_trips(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + "[1]\n")
    ScoringRun(str(data), [TwoStepScorer(EchoJudge())], str(tmp_path / "o.jsonl")).execute()
    ScoringRun(str(data), [TwoStepScorer(EchoJudge())], str(tmp_path / "o.parquet")).execute()
    from_jsonl = list(read_results(tmp_path / "o.jsonl"))
    assert list(read_results(tmp_path / "o.parquet")) == from_jsonl
    table = pq.read_table(tmp_path / "o.parquet")
    assert table.column_names == ["line", "id", "error", "score_two_step", "results"]
    assert table.column("score_two_step").to_pylist()[:3] == [8 / 19, 14 / 26, 2 / 22]
    assert (tmp_path / "o.manifest.json").exists() and (tmp_path / "o.errors.jsonl").exists()


def test_format_detection():
    assert detect_format("x.JSONL", None, ("jsonl", "csv"), "input") == "jsonl"
    assert detect_format("x.txt", "csv", ("jsonl", "csv"), "input") == "csv"
    with pytest.raises(FormatError, match="--input-format"):
        detect_format("x.txt", None, ("jsonl", "csv"), "input")
    with pytest.raises(FormatError, match="--format"):
        detect_format("results.csv", None, ("jsonl", "parquet"), "output")


def test_cli_reads_csv_and_writes_parquet(tmp_path, monkeypatch):
    from evallocal.cli import main

    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "cache"))
    data = write_csv(tmp_path / "d.csv", [["x", "apples, oranges, and bananas", "apples and bananas", ""],
                                          ["broken"]])
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(tmp_path / "r.parquet"), "--quiet"]) == 1
    lines = list(read_results(tmp_path / "r.parquet"))
    assert lines[0]["results"]["completeness-scorer"]["score"] == 0.75
    assert lines[1] == {"line": 2, "error": "row 2: expected 4 cells (as in the header), got 1"}
