"""The `evallocal` command line: parses arguments and hands them to a subcommand."""

from __future__ import annotations

import argparse
import logging
import sys

from .commands import score


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evallocal",
        description="Score LLM outputs (hallucination, answer relevancy, completeness, bias) offline, "
                    "with open models on this machine. Nothing is sent over the network.",
    )
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log verbosity; DEBUG logs every judge batch (default: WARNING)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from .commands import cache, manifest, models, report

    for module in (score, cache, manifest, report, models):
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
