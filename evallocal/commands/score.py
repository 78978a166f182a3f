"""`evallocal score`: stream a data file through scorers into a results file.

Resumable (the same command again continues an interrupted run), cached (judge answers are
reused across runs), and reproducible (a manifest beside the results records what decided them).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..cache import CacheError, JudgeCache
from ..formats import INPUT_FORMATS, OUTPUT_FORMATS, FormatError
from ..records import FieldMap
from ..scoring_run import RunError, ScoringRun


_QUIET_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def register(subparsers) -> None:
    from ..scorers import SCORERS

    parser = subparsers.add_parser(
        "score", help="score a data file (JSONL, CSV or Parquet)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Score every record of DATA with the chosen scorers. Writes one result per input record, in\n"
            "input order, to --out (JSON lines, or Parquet for a .parquet name), and a manifest\n"
            "(OUT.manifest.json) recording versions, model and prompt hashes, settings and the input's sha256.\n"
            "Malformed records are listed (with their line/row numbers) in the summary and in an errors file,\n"
            "and every other record is still scored.\n\n"
            "Resume: an interrupted run (Ctrl-C, kill) continues where it stopped when the same command is\n"
            "run again (--restart starts over). Cache: judge answers are reused across runs (see\n"
            "`evallocal cache`), so a rerun on the same data does no judge work (--no-cache: off).\n\n"
            "Exit status: 0 when every record was read, 1 when any was malformed, 2 when the run could not\n"
            "start or go on, 130 when interrupted."),
    )
    parser.add_argument("data", help="input file: .jsonl, .csv (header row) or .parquet")
    parser.add_argument("--scorer", action="append", required=True, choices=sorted(SCORERS),
                        help="scorer to run (repeat for several)")
    parser.add_argument("--out", required=True, help="results file: .jsonl (JSON lines) or .parquet")
    parser.add_argument("--format", choices=OUTPUT_FORMATS, help="results format (default: from the --out extension)")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, help="input format (default: from the extension)")
    parser.add_argument("--errors", help="errors file for malformed records (default: OUT with .errors.jsonl)")
    parser.add_argument("--judge", help="judge model for the model-based scorers: registry name or local path "
                                        "(default: the embedded judge of each scorer)")
    parser.add_argument("--input-field", default="input", help="field holding the request (default: input)")
    parser.add_argument("--output-field", default="output", help="field holding the answer (default: output)")
    parser.add_argument("--context-field", default="context",
                        help="field holding the context for hallucination scoring (default: context)")
    parser.add_argument("--id-field", default="id", help="field holding the item id (default: id)")
    parser.add_argument("--chunk-size", type=int, default=256,
                        help="records scored together; each chunk is one set of batched judge rounds and is "
                             "written (and fsynced) whole, so a resumed run restarts at a chunk (default: 256)")
    parser.add_argument("--seed", type=int, default=0, help="random seed, reset before every chunk (default: 0)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the judge cache ($EVALLOCAL_CACHE, else "
                             "$XDG_CACHE_HOME/evallocal, else ~/.cache/evallocal)")
    parser.add_argument("--restart", action="store_true",
                        help="start over even when --out holds an unfinished run (default: resume it)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (for CI logs)")
    parser.set_defaults(handler=run)


def build_scorers(names: list[str], judge: str | None) -> list:
    from ..scorers import SCORERS

    scorers = []
    for name in dict.fromkeys(names):
        factory = SCORERS[name]
        scorers.append(factory(model=judge) if judge and "model" in factory.__code__.co_varnames else factory())
    return scorers


def errors_path(out: str, errors: str | None) -> Path:
    from ..scoring_run import run_paths

    if errors:
        return Path(errors)
    try:
        return run_paths(out).errors
    except FormatError:
        return Path(out).with_name(Path(out).name + ".errors.jsonl")


def run(args: argparse.Namespace) -> int:
    fields = FieldMap(input=args.input_field, output=args.output_field, context=args.context_field, id=args.id_field)
    if not Path(args.data).is_file():
        print(f"error: input file not found: {args.data}", file=sys.stderr)
        return 2
    saved_env = {name: os.environ.get(name) for name in _QUIET_ENV}
    if args.quiet:  # also the model loaders' progress bars
        os.environ.update(_QUIET_ENV)
    cache = None
    try:
        if not args.no_cache:
            cache = JudgeCache()
        scorers = build_scorers(args.scorer, args.judge)
        scoring = ScoringRun(args.data, scorers, args.out, fields=fields, input_format=args.input_format,
                             output_format=args.format, errors=args.errors, chunk_size=args.chunk_size,
                             seed=args.seed, cache=cache, restart=args.restart, progress=not args.quiet)
        summary = scoring.execute()
    except (RunError, CacheError, FormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: run the same command again to continue where it stopped "
              "(or add --restart to start over)", file=sys.stderr)
        return 130
    finally:
        if cache is not None:
            cache.close()
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    paths = scoring.paths
    print(summary.table())
    if scoring.resumed_from:
        print(f"\nresumed after {scoring.resumed_from} records already in {paths.out}")
    if cache is not None:
        print(f"\njudge cache: {cache.hits} answers reused, {cache.misses} computed ({cache.path})")
    print(f"\nresults: {paths.out}\nmanifest: {paths.manifest}" + (f"\nerrors: {paths.errors}" if summary.malformed_count() else ""))
    return 1 if summary.malformed_count() else 0
