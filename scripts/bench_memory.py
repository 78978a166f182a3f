"""Peak memory of `evallocal score` (completeness) against the number of input rows.

    python scripts/bench_memory.py                  # 10k and 100k rows
    python scripts/bench_memory.py --rows 10000 30000 --format csv

Each size runs in its own subprocess on synthetic short rows (a fixed vocabulary, so spaCy's
string store stays the same size, as it would on real text after warm-up) and reports its peak
RSS (ru_maxrss), the time and the rate. Streaming means the peak must not grow with the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOUNS = ("capital city river mountain engine battery planet vaccine protein library museum harbour bridge "
         "forest desert island market school hospital village kingdom theory language festival garden "
         "orchestra satellite volcano glacier railway airport factory cathedral").split()
PLACES = "France Spain Peru Kenya Japan Norway Chile Egypt Canada India Brazil Italy".split()
VERBS = "build visit measure explain describe protect replace improve design discover".split()
ADJECTIVES = "largest oldest busiest tallest newest quietest famous ancient modern remote".split()


def synth_row(rng: random.Random, i: int) -> dict:
    noun, place, verb, adj = rng.choice(NOUNS), rng.choice(PLACES), rng.choice(VERBS), rng.choice(ADJECTIVES)
    other = rng.choice(NOUNS)
    question = f"How did they {verb} the {adj} {noun} in {place}?"
    answer = (f"They {verb}d the {adj} {noun} in {place} with a new {other}."
              if rng.random() < 0.7 else f"The {other} of {rng.choice(PLACES)} is {rng.choice(ADJECTIVES)}.")
    return {"id": f"r{i}", "input": question, "output": answer}


def write_rows(path: Path, rows: int, fmt: str, seed: int = 7) -> None:
    rng = random.Random(seed)
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for i in range(rows):
                handle.write(json.dumps(synth_row(rng, i)) + "\n")
    elif fmt == "csv":
        import csv

        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["id", "input", "output"])
            writer.writeheader()
            for i in range(rows):
                writer.writerow(synth_row(rng, i))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("id", pa.string()), ("input", pa.string()), ("output", pa.string())])
        with pq.ParquetWriter(str(path), schema) as writer:
            for start in range(0, rows, 10_000):
                batch = [synth_row(rng, i) for i in range(start, min(rows, start + 10_000))]
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def child(data: str, out: str, chunk_size: int) -> None:
    """Runs in the measured subprocess: score `data` into `out`, print the measurements."""
    from evallocal.scorers import create_completeness_scorer
    from evallocal.scoring_run import ScoringRun

    started = time.perf_counter()
    scorer = create_completeness_scorer()
    summary = ScoringRun(data, [scorer], out, chunk_size=chunk_size, cache=None).execute()
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"rows": summary.lines, "seconds": round(seconds, 1), "rows_per_s": round(summary.lines / seconds, 1),
                      "peak_rss_mb": round(peak_kb / 1024, 1)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--format", choices=["jsonl", "csv", "parquet"], default="jsonl")
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--child", nargs=2, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.chunk_size)
        return 0
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    figures = []
    with tempfile.TemporaryDirectory(prefix="evallocal-bench-") as tmp:
        for rows in args.rows:
            data = Path(tmp) / f"rows-{rows}.{args.format}"
            write_rows(data, rows, args.format)
            done = subprocess.run([sys.executable, __file__, "--chunk-size", str(args.chunk_size), "--child", str(data),
                                   str(Path(tmp) / f"out-{rows}.jsonl")], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            figure = json.loads(done.stdout.strip().splitlines()[-1])
            figures.append(figure)
            print(f"{rows:>8} rows: peak RSS {figure['peak_rss_mb']:.1f} MB, {figure['seconds']:.1f} s "
                  f"({figure['rows_per_s']:.0f} rows/s)", flush=True)
    if len(figures) > 1:
        growth = figures[-1]["peak_rss_mb"] - figures[0]["peak_rss_mb"]
        print(f"peak RSS growth from {figures[0]['rows']} to {figures[-1]['rows']} rows: {growth:+.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
