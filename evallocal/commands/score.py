"""`evallocal score`: stream a data file through scorers into a JSON-lines results file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import InputError
from ..records import FieldMap, Record, chunks, read_jsonl, to_item
from ..runner import run_scorers
from ..summary import RunSummary


def register(subparsers) -> None:
    from ..scorers import SCORERS

    parser = subparsers.add_parser(
        "score", help="score a JSON-lines data file",
        description="Score every line of DATA with the chosen scorers. Writes one JSON object per input "
                    "line, in input order, to --out; malformed lines are listed (with their line numbers) "
                    "in the summary and in an errors file, and every other line is still scored. "
                    "Exit status: 0 when every line was read, 1 when any line was malformed.",
    )
    parser.add_argument("data", help="input file, one JSON object per line")
    parser.add_argument("--scorer", action="append", required=True, choices=sorted(SCORERS),
                        help="scorer to run (repeat for several)")
    parser.add_argument("--out", required=True, help="results file (JSON lines)")
    parser.add_argument("--errors", help="errors file for malformed lines (default: OUT with .errors.jsonl)")
    parser.add_argument("--judge", help="judge model for the model-based scorers: registry name or local path "
                                        "(default: the embedded judge of each scorer)")
    parser.add_argument("--input-field", default="input", help="field holding the request (default: input)")
    parser.add_argument("--output-field", default="output", help="field holding the answer (default: output)")
    parser.add_argument("--context-field", default="context",
                        help="field holding the context for hallucination scoring (default: context)")
    parser.add_argument("--id-field", default="id", help="field holding the item id (default: id)")
    parser.add_argument("--chunk-size", type=int, default=256,
                        help="lines scored together; each chunk is one set of batched judge rounds (default: 256)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def build_scorers(names: list[str], judge: str | None) -> list:
    from ..scorers import SCORERS

    scorers = []
    for name in dict.fromkeys(names):
        factory = SCORERS[name]
        scorers.append(factory(model=judge) if judge and "model" in factory.__code__.co_varnames else factory())
    return scorers


def errors_path(out: str, errors: str | None) -> Path:
    if errors:
        return Path(errors)
    out_path = Path(out)
    return out_path.with_name(out_path.name.removesuffix(".jsonl") + ".errors.jsonl")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    fields = FieldMap(input=args.input_field, output=args.output_field, context=args.context_field, id=args.id_field)
    out_path, err_path = Path(args.out), errors_path(args.out, args.errors)
    if not Path(args.data).is_file():
        print(f"error: input file not found: {args.data}", file=sys.stderr)
        return 2
    scorers = build_scorers(args.scorer, args.judge)
    summary = RunSummary()
    # Opened before any judge work: an unwritable output path fails at once.
    with open(out_path, "w", encoding="utf-8") as out, open(err_path, "w", encoding="utf-8") as errors, \
            tqdm(desc="scoring", unit="item", disable=args.quiet, file=sys.stderr) as progress:
        for chunk in chunks(read_jsonl(args.data), args.chunk_size):
            for line in score_chunk(chunk, scorers, fields, summary, errors):
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            progress.update(len(chunk))
    print(summary.table())
    print(f"\nresults: {out_path}" + (f"\nerrors: {err_path}" if summary.bad_lines else ""))
    return 1 if summary.bad_lines else 0


def score_chunk(chunk: list[Record], scorers: list, fields: FieldMap, summary: RunSummary, errors) -> list[dict]:
    """Score the well-formed records of a chunk together; return one output object per record."""
    items, lines = [], []
    for record in chunk:
        summary.lines += 1
        error = record.error
        if error is None:
            try:
                items.append(to_item(record, fields))
            except InputError as exc:
                error = str(exc)
        if error is not None:
            summary.bad_lines.append((record.line, error))
            errors.write(json.dumps({"line": record.line, "error": error}) + "\n")
            lines.append({"line": record.line, "error": error})
        else:
            lines.append({"line": record.line, "id": items[-1].run_id})
    results = iter(run_scorers(items, scorers))
    for line in lines:
        if "error" not in line:
            row = next(results)
            line["results"] = {scorer.id: result.to_dict() for scorer, result in zip(scorers, row)}
            for scorer, result in zip(scorers, row):
                summary.add(scorer.id, result)
    return lines
