"""`evallocal report RESULTS -o report.html`: one self-contained HTML page."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="write an HTML report of a results file",
        description="Write one self-contained HTML file (inline SVG plots; no scripts, fonts or images from "
                    "anywhere) with per-scorer score histograms, a summary table, the worst items with their "
                    "claims, verdicts and reasons, the items that could not be scored, and the run manifest.",
    )
    parser.add_argument("results", help="results file of `evallocal score` (.jsonl or .parquet)")
    parser.add_argument("-o", "--out", required=True, help="HTML file to write")
    parser.add_argument("--manifest", help="manifest file (default: the one beside RESULTS)")
    parser.add_argument("--worst", type=int, default=10, help="worst items shown per scorer (default: 10)")
    parser.add_argument("--title", help="page title")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..formats import FormatError
    from ..report import write_report

    try:
        out = write_report(args.results, args.out, manifest=args.manifest, worst=args.worst, title=args.title)
    except FileNotFoundError as exc:
        print(f"error: file not found: {exc.filename}", file=sys.stderr)
        return 2
    except (OSError, ValueError, FormatError) as exc:
        print(f"error: cannot write the report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {out}")
    return 0
