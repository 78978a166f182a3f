"""`evallocal models list|verify NAME`: the judge model registry and hash checks."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "models", help="list the judge models or verify one's files",
        description="Judge models come from models/registry.toml (or $EVALLOCAL_MODELS). Nothing is "
                    "downloaded: models other than the embedded defaults are transferred with "
                    "scripts/prepare_models.py.",
    )
    actions = parser.add_subparsers(dest="models_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="registered models: kind, licence, size, present here or not")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(handler=run_list)
    verify = actions.add_parser("verify", help="check a model's files against their registered sha256")
    verify.add_argument("name", help="registry name (see `evallocal models list`)")
    verify.set_defaults(handler=run_verify)


def run_list(args: argparse.Namespace) -> int:
    from ..models import ModelError, list_models

    try:
        models = list_models()
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(models, indent=2))
        return 0
    width = max(len(m["name"]) for m in models) if models else 4
    print(f"{'name':<{width}}  {'kind':<9}  {'here':<4}  {'licence':<20}  size")
    for m in models:
        licence = m["licence"] if len(m["licence"]) <= 20 else m["licence"][:19] + "…"
        print(f"{m['name']:<{width}}  {m['kind']:<9}  {'yes' if m['present'] else 'no':<4}  {licence:<20}  {m['size']}")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from ..models import ModelError, ModelHashError, verify_model

    try:
        report = verify_model(args.name)
    except ModelHashError as exc:
        print(f"MISMATCH: {exc}", file=sys.stderr)
        return 1
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unverified = [f for f, sha in report.items() if sha == "unverified"]
    for name, sha in sorted(report.items()):
        print(f"{'unverified' if sha == 'unverified' else 'ok':<10}  {name}  {'' if sha == 'unverified' else sha}")
    if not report:
        print(f"{args.name}: no files registered; fill them with scripts/prepare_models.py")
    elif unverified:
        print(f"{args.name}: {len(report) - len(unverified)} file(s) verified, {len(unverified)} without a registered hash")
    else:
        print(f"{args.name}: all {len(report)} file(s) match")
    return 0
