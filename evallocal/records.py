"""Reading input records as a stream and turning them into score items, line by line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Iterator, Mapping

from .errors import InputError
from .scorers.base import ScoreItem


@dataclass(frozen=True)
class FieldMap:
    """Which record fields hold the input, the output and the optional extras."""

    input: str = "input"
    output: str = "output"
    context: str = "context"
    ground_truth: str = "ground_truth"
    id: str = "id"


@dataclass(frozen=True)
class Record:
    """One input line: its number (1-based) and either its parsed object or why it is malformed."""

    line: int
    value: Mapping | None
    error: str | None = None
    where: str = "line"  # how messages name the record: "line" (JSONL) or "row" (CSV, Parquet, iterables)


def read_jsonl(path: str) -> Iterator[Record]:
    """Stream a JSON-lines file; a bad line becomes a Record with an error, never an exception."""
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield Record(number, None, f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(value, dict):
                yield Record(number, None, f"line {number}: expected a JSON object, got {type(value).__name__}")
                continue
            yield Record(number, value)


def _is_text_or_messages(value: Any) -> bool:
    return isinstance(value, (str, list, dict))


def to_item(record: Record, fields: FieldMap) -> ScoreItem:
    """The ScoreItem for a well-formed record; InputError naming the line and field otherwise."""
    value, at = record.value, f"{record.where} {record.line}"
    for name in (fields.input, fields.output):
        if name not in value:
            raise InputError(f"{at}: missing field {name!r} (fields present: {sorted(value)}); "
                             f"rename it or pass --input-field/--output-field")
        if not _is_text_or_messages(value[name]):
            raise InputError(f"{at}: field {name!r} must be a string or a list of messages, "
                             f"got {type(value[name]).__name__}")
    context = value.get(fields.context)
    if context is not None and not (isinstance(context, str) or
                                    (isinstance(context, list) and all(isinstance(c, str) for c in context))):
        raise InputError(f"{at}: field {fields.context!r} must be a string or a list of strings")
    request_context = {"context": [context] if isinstance(context, str) else context} if context is not None else None
    return ScoreItem(input=value[fields.input], output=value[fields.output],
                     ground_truth=value.get(fields.ground_truth), request_context=request_context,
                     run_id=str(record_id) if (record_id := value.get(fields.id)) not in (None, "")
                     else f"{record.where}-{record.line}")


def chunks(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    iterator = iter(records)
    while chunk := list(islice(iterator, size)):
        yield chunk
