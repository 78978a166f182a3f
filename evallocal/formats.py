"""Input and output formats, streamed in bounded memory.

Inputs (chosen by extension or `--input-format`): JSON lines, CSV, Parquet (read in record
batches with pyarrow) and Python iterables of dicts. Each yields `Record`s: a malformed row
becomes a Record with an error, never an exception, so one bad row costs only itself.

Outputs: JSON lines (the working format: appended chunk by chunk, so a run can resume) and
Parquet (made from the JSON-lines working file when the run completes, batch by batch).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .records import Record, read_jsonl

INPUT_FORMATS = ("jsonl", "csv", "parquet")
OUTPUT_FORMATS = ("jsonl", "parquet")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
               ".parquet": "parquet", ".pq": "parquet"}
PARQUET_BATCH_ROWS = 1024


class FormatError(ValueError):
    """An unknown or unsupported file format; the message says how to choose one."""


def detect_format(path: str | os.PathLike, explicit: str | None, allowed: tuple[str, ...], what: str) -> str:
    if explicit:
        if explicit not in allowed:
            raise FormatError(f"unknown {what} format {explicit!r}; choose one of {', '.join(allowed)}")
        return explicit
    suffix = Path(path).suffix.lower()
    found = _EXTENSIONS.get(suffix)
    if found is None or found not in allowed:
        raise FormatError(f"cannot tell the {what} format of {str(path)!r} from its extension {suffix or '(none)'!r}; "
                          f"use a .{'/.'.join(allowed)} name or pass --{'format' if what == 'output' else 'input-format'}")
    return found


# --- reading ------------------------------------------------------------------------------------


def read_records(path: str | os.PathLike, fmt: str, text_fields: tuple[str, ...] = ("input", "output")) -> Iterator[Record]:
    """`text_fields`: CSV columns whose empty cell is an empty text (other empty cells are absent)."""
    if fmt == "jsonl":
        return read_jsonl(str(path))
    if fmt == "csv":
        return read_csv(path, text_fields)
    if fmt == "parquet":
        return read_parquet(path)
    raise FormatError(f"unknown input format {fmt!r}; choose one of {', '.join(INPUT_FORMATS)}")


def _decode_cell(value: str) -> Any:
    """A CSV cell: JSON lists/objects (messages, context lists) are decoded."""
    stripped = value.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def read_csv(path: str | os.PathLike, text_fields: tuple[str, ...] = ("input", "output")) -> Iterator[Record]:
    """Stream a CSV file with a header row. Rows are numbered from 1 (the header is not counted);
    a row with a different number of cells than the header is malformed. An empty cell is an
    empty text in the `text_fields` columns (an empty answer is an answer) and absent elsewhere."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Record(1, None, f"row 1: unreadable CSV header ({exc})", where="row")
            return
        number = 0
        while True:
            number += 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield Record(number, None, f"row {number}: unreadable CSV ({exc})", where="row")
                continue
            if not cells or all(not c.strip() for c in cells) and len(cells) <= 1:
                number -= 1  # blank lines are skipped, like blank JSON lines
                continue
            if len(cells) != len(header):
                yield Record(number, None, f"row {number}: expected {len(header)} cells (as in the header), "
                                           f"got {len(cells)}", where="row")
                continue
            yield Record(number, {name: _decode_cell(cell) for name, cell in zip(header, cells)
                                  if cell != "" or name in text_fields}, where="row")


def read_parquet(path: str | os.PathLike, batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[Record]:
    """Stream a Parquet file in record batches (bounded memory); rows numbered from 1."""
    import pyarrow.parquet as pq

    number = 0
    with pq.ParquetFile(str(path)) as parquet:
        for batch in parquet.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                number += 1
                yield Record(number, {k: v for k, v in row.items() if v is not None}, where="row")


def iter_records(rows: Iterable[Any]) -> Iterator[Record]:
    """Records from a Python iterable of dicts (numbered from 1); a non-dict row is malformed."""
    for number, row in enumerate(rows, start=1):
        if isinstance(row, Mapping):
            yield Record(number, dict(row), where="row")
        else:
            yield Record(number, None, f"row {number}: expected a dict, got {type(row).__name__}", where="row")


def count_records(path: str | os.PathLike, fmt: str) -> int | None:
    """How many records the file holds, cheaply (for the progress bar's total); None if unknown."""
    try:
        if fmt == "jsonl":
            count = 0
            with open(path, "rb") as handle:
                for line in handle:
                    if line.strip():
                        count += 1
            return count
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(str(path)) as parquet:
                return parquet.metadata.num_rows
        if fmt == "csv":
            return sum(1 for _ in read_csv(path))
    except (OSError, ValueError):
        return None
    return None


# --- writing ------------------------------------------------------------------------------------


def dump_line(obj: Mapping) -> str:
    """The one JSON encoding of a result line (stable: key order as built, no spaces to vary)."""
    return json.dumps(obj, ensure_ascii=False, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    return str(value)  # dates, decimals and the like from Parquet columns: as text, never a crash


def parquet_schema(scorer_ids: list[str]):
    import pyarrow as pa

    columns = [pa.field("line", pa.int64()), pa.field("id", pa.string()), pa.field("error", pa.string())]
    columns += [pa.field(score_column(sid), pa.float64()) for sid in scorer_ids]
    columns.append(pa.field("results", pa.string()))  # the full results object, as JSON
    return pa.schema(columns)


def score_column(scorer_id: str) -> str:
    return "score_" + scorer_id.replace("-", "_")


def jsonl_to_parquet(source: str | os.PathLike, target: str | os.PathLike, scorer_ids: list[str],
                     batch_rows: int = PARQUET_BATCH_ROWS) -> None:
    """Convert a results JSON-lines file to Parquet in row groups of `batch_rows` (bounded
    memory); written to a temporary name and renamed, so `target` is whole or absent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(scorer_ids)
    tmp = Path(str(target) + ".tmp")
    with open(source, encoding="utf-8") as handle, pq.ParquetWriter(str(tmp), schema) as writer:
        batch: list[dict] = []
        for text in handle:
            line = json.loads(text)
            results = line.get("results")
            row = {"line": line["line"], "id": line.get("id"), "error": line.get("error"),
                   "results": None if results is None else json.dumps(results, ensure_ascii=False)}
            for sid in scorer_ids:
                score = (results or {}).get(sid, {}).get("score")
                row[score_column(sid)] = None if score is None else float(score)
            batch.append(row)
            if len(batch) >= batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def read_results(path: str | os.PathLike) -> Iterator[dict]:
    """Result lines back from a JSONL or Parquet results file, streamed."""
    fmt = detect_format(path, None, OUTPUT_FORMATS, "results")
    if fmt == "jsonl":
        with open(path, encoding="utf-8") as handle:
            for text in handle:
                if text.strip():
                    yield json.loads(text)
        return
    import pyarrow.parquet as pq

    with pq.ParquetFile(str(path)) as parquet:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=["line", "id", "error", "results"]):
            for row in batch.to_pylist():
                line = {"line": row["line"]}
                if row.get("error") is not None:
                    line["error"] = row["error"]
                else:
                    line["id"] = row["id"]
                    line["results"] = json.loads(row["results"]) if row["results"] is not None else {}
                yield line
