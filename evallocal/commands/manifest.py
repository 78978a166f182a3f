"""`evallocal manifest diff A B`: what differs between two run manifests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..manifest import diff, format_diff, load_manifest, manifest_path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "manifest", help="compare run manifests",
        description="Compare the manifests of two runs: every setting, version, model or prompt hash that "
                    "differs is printed as `key.path: old -> new`. Exit status 0 when they match, 1 when not.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    compare = actions.add_parser("diff", help="print what differs between manifest A and manifest B")
    compare.add_argument("a", help="manifest file, or a results file (its manifest beside it is used)")
    compare.add_argument("b", help="manifest file, or a results file")
    compare.add_argument("--results-only", action="store_true",
                         help="only what decides the results (leave out paths, run status, cache counts)")
    compare.set_defaults(handler=run)


def _load(name: str) -> dict:
    path = Path(name)
    if not name.endswith(".json") or name.endswith(".errors.json"):
        path = manifest_path(path)
    return load_manifest(path)


def run(args: argparse.Namespace) -> int:
    try:
        a, b = _load(args.a), _load(args.b)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read a manifest: {exc}", file=sys.stderr)
        return 2
    changes = diff(a, b, only_identity=args.results_only)
    if not changes:
        print("manifests match")
        return 0
    print(format_diff(changes))
    return 1
