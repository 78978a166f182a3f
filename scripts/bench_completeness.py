"""Completeness throughput: pairs/s and peak memory on 1,000 question/answer pairs.

Pairs come from the labelled samples in ../shared/benchmarks (question or context as input,
answer or summary as output), drawn with a fixed seed. The spaCy pipeline is loaded and warmed
up before timing. The reference JavaScript scorer does about 100 pairs/s on this machine.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path

from evallocal.runner import run_scorers
from evallocal.scorers.base import ScoreItem
from evallocal.scorers.completeness import CompletenessScorer
from evallocal.text.spacy_judge import SpacyJudge

SOURCES = {  # file -> (input field, output field)
    "completeness_haluquestqa.jsonl": ("question", "output"),
    "relevancy_haluquestqa.jsonl": ("question", "answer"),
    "halluc_halueval_qa.jsonl": ("question", "output"),
    "bias_bbq_nationality.jsonl": ("question", "output"),
    "halluc_summedits.jsonl": ("context", "output"),
    "completeness_realsumm.jsonl": ("output", "output"),
}


def load_pairs(folder: Path, count: int, seed: int) -> list[tuple[str, str]]:
    pairs = []
    for name, (input_field, output_field) in SOURCES.items():
        for line in (folder / name).read_text().splitlines():
            row = json.loads(line)
            if isinstance(row.get(input_field), str) and isinstance(row.get(output_field), str):
                pairs.append((row[input_field], row[output_field]))
    pairs = list(dict.fromkeys(pairs))
    random.Random(seed).shuffle(pairs)
    if len(pairs) < count:
        raise SystemExit(f"only {len(pairs)} distinct pairs in {folder}; ask for fewer")
    return pairs[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmarks", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"))
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk-size", type=int, default=256, help="items per runner call, as in the CLI")
    parser.add_argument("--n-process", type=int, default=1, help="spaCy worker processes")
    args = parser.parse_args()

    pairs = load_pairs(Path(args.benchmarks), args.pairs, args.seed)
    words = sum(len(a.split()) + len(b.split()) for a, b in pairs) / len(pairs)
    scorer = CompletenessScorer(SpacyJudge(n_process=args.n_process))
    scorer.run(input="warm up the pipeline", output="warm up")

    started, cpu_started = time.perf_counter(), time.process_time()
    scores = []
    for start in range(0, len(pairs), args.chunk_size):
        items = [ScoreItem(a, b) for a, b in pairs[start:start + args.chunk_size]]
        scores += [row[0].score for row in run_scorers(items, [scorer])]
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert all(s is not None for s in scores)

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pairs: {len(pairs)} ({words:.0f} words per pair), spaCy processes: {args.n_process}")
    print(f"pipeline: {scorer.judge.describe()['components']}")
    print(f"time: {elapsed:.2f} s, peak RSS: {peak_mb:.0f} MB, mean score: {sum(scores) / len(scores):.4f}")
    # CPU seconds are less disturbed than wall time when other jobs share the cores.
    print(f"cpu time: {cpu:.2f} s ({len(pairs) / cpu:.1f} pairs per CPU second)")
    print(f"throughput: {len(pairs) / elapsed:.1f} pairs/s")


if __name__ == "__main__":
    main()
