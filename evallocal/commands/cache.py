"""`evallocal cache stats|clear`: look at or delete the judge cache."""

from __future__ import annotations

import argparse
import sys

from ..cache import CacheError, JudgeCache, clear_cache, default_cache_path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache", help="show or clear the judge cache",
        description="The judge cache keeps every judge answer, keyed by the judge's identity (model file "
                    "hashes, settings) and the exact request, so reruns skip the judge work. It lives in "
                    "$EVALLOCAL_CACHE, else $XDG_CACHE_HOME/evallocal, else ~/.cache/evallocal.",
    )
    parser.add_argument("action", choices=["stats", "clear"], help="stats: entries and size; clear: delete it")
    parser.add_argument("--path", help="cache file (default: judge-cache.sqlite3 in the cache directory)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = args.path or default_cache_path()
    if args.action == "clear":
        removed = clear_cache(path)
        print(f"removed {', '.join(str(p) for p in removed)}" if removed else f"no cache at {path}")
        return 0
    if not __import__("os").path.exists(path):
        print(f"no cache at {path} (it is made by the first `evallocal score` run)")
        return 0
    try:
        with JudgeCache(path) as cache:
            stats = cache.stats()
    except CacheError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"cache: {stats['path']}\nentries: {stats['entries']}\nsize: {stats['bytes'] / 1e6:.1f} MB")
    for row in stats["by_judge"]:
        print(f"  {row['judge']} ({row['kind']}): {row['entries']}")
    return 0
