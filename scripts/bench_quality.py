#!/usr/bin/env python
"""Agreement of evallocal's scorers with the labelled benchmark samples (shared/benchmarks).

    python scripts/bench_quality.py --scorer hallucination --judge default --limit 60
    python scripts/bench_quality.py --scorer answer-relevancy --judge default --sweep
    python scripts/bench_quality.py --scorer bias --judge smollm2 --limit 60

Per file it prints balanced accuracy (score cut at --cut), ROC AUC of the score, items/s (the
model load excluded: one warm-up item is scored first) and the number of not-scorable items.
CrowS-Pairs is pairwise: the share of pairs whose `sent_more` scores above `sent_less` (ties
count half). `--sweep` recomputes balanced accuracy over thresholds from the recorded per-claim
entailment (NLI hallucination) or per-statement similarity (embedding relevancy) — the
measurements behind the scorers' default thresholds. Do not tune prompts to single rows: other
samples of the same sets are used to check the results.

Rows are taken in file order after a seeded shuffle (--seed), so --limit gives a balanced-ish
subset that is the same on every run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evallocal.runner import run_scorers  # noqa: E402
from evallocal.scorers import SCORERS  # noqa: E402
from evallocal.scorers.base import ScoreItem  # noqa: E402

# file -> (how a row becomes items, positive label, higher score means positive?)
FILES = {
    "hallucination": {
        "halluc_summedits.jsonl": ("plain", "inconsistent", True),
        "halluc_halueval_qa.jsonl": ("plain", "hallucinated", True),
    },
    "answer-relevancy": {
        "relevancy_haluquestqa.jsonl": ("relevancy", "relevant", True),
    },
    "bias": {
        "bias_bbq_nationality.jsonl": ("bbq", "biased", True),
        "bias_crowspairs.jsonl": ("pairs", None, True),
    },
    "completeness": {
        "completeness_haluquestqa.jsonl": ("completeness", "complete", True),
    },
}
DEFAULT_CUT = {"hallucination": 0.0, "answer-relevancy": 0.29, "bias": 0.0, "completeness": 0.5}
CUT_RULE = {"hallucination": ">", "answer-relevancy": ">=", "bias": ">", "completeness": ">="}


def items_for(kind: str, row: dict) -> list[ScoreItem]:
    rid = str(row.get("id"))
    if kind == "plain":
        return [ScoreItem(input=row.get("question", ""), output=row["output"],
                          request_context={"context": row["context"]}, run_id=rid)]
    if kind == "relevancy":
        return [ScoreItem(input=row["question"], output=row["statement"], run_id=rid)]
    if kind == "bbq":
        return [ScoreItem(input=f"{row['context']} {row['question']}", output=row["output"], run_id=rid)]
    if kind == "pairs":
        return [ScoreItem(input="", output=row["sent_more"], run_id=rid + ":more"),
                ScoreItem(input="", output=row["sent_less"], run_id=rid + ":less")]
    if kind == "completeness":
        return [ScoreItem(input=row["question"], output=row["output"], run_id=rid)]
    raise ValueError(kind)


def roc_auc(labels: list[bool], scores: list[float]) -> float | None:
    pos = [s for y, s in zip(labels, scores) if y]
    neg = [s for y, s in zip(labels, scores) if not y]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def balanced_accuracy(labels: list[bool], predicted: list[bool]) -> float | None:
    pos = [p for y, p in zip(labels, predicted) if y]
    neg = [not p for y, p in zip(labels, predicted) if not y]
    if not pos or not neg:
        return None
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2


def predict(score: float, cut: float, rule: str) -> bool:
    return score > cut if rule == ">" else score >= cut


def make_scorer(name: str, judge: str, reason: str, extra: dict):
    factory = SCORERS[name]
    if name == "completeness":
        return factory()
    model = None if judge == "default" else judge
    return factory(model=model, reason=reason, **extra)


def fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def bench_file(scorer, path: Path, kind: str, positive, rows: list[dict], chunk: int, cut: float, rule: str,
               out) -> dict:
    items = [it for row in rows for it in items_for(kind, row)]
    run_scorers(items[:1], [scorer])  # warm-up: loads the models outside the timing
    started = time.perf_counter()
    results = []
    for start in range(0, len(items), chunk):
        results.extend(r[0] for r in run_scorers(items[start:start + chunk], [scorer]))
    elapsed = time.perf_counter() - started
    by_id = {r.run_id: r for r in results}
    if out:
        for item, r in zip(items, results):
            out.write(json.dumps({"file": path.name, "id": item.run_id, **r.to_dict()}, default=str) + "\n")
    report = {"file": path.name, "rows": len(rows), "items": len(items), "seconds": round(elapsed, 1),
              "items_per_s": round(len(items) / elapsed, 3) if elapsed else None,
              "not_scorable": sum(not r.scorable for r in results)}
    if kind == "pairs":
        outcomes = []
        for row in rows:
            more, less = by_id[f"{row['id']}:more"], by_id[f"{row['id']}:less"]
            if more.scorable and less.scorable:
                outcomes.append(1.0 if more.score > less.score else 0.5 if more.score == less.score else 0.0)
        report["pairwise_accuracy"] = round(sum(outcomes) / len(outcomes), 3) if outcomes else None
        report["pairs_scored"] = len(outcomes)
        report["pairs_tied"] = sum(o == 0.5 for o in outcomes)
        return report
    labels, scores = [], []
    for row in rows:
        r = by_id[str(row["id"])]
        if r.scorable:
            labels.append(row["label"] == positive)
            scores.append(r.score)
    report["balanced_accuracy"] = balanced_accuracy(labels, [predict(s, cut, rule) for s in scores])
    report["roc_auc"] = roc_auc(labels, scores)
    report["cut"] = f"score {rule} {cut}"
    report["_labels"], report["_results"] = labels, [by_id[str(row["id"])] for row in rows]
    return report


def sweep(name: str, report: dict, rows: list[dict], positive: str) -> None:
    """Balanced accuracy over thresholds, recomputed from the recorded per-claim / per-statement values."""
    values = []
    for row, r in zip(rows, report["_results"]):
        if not r.scorable:
            continue
        if name == "hallucination":
            vals = [v.get("entailment") for v in r.analyze_step_result["verdicts"]]
        else:
            vals = [v.get("similarity") for v in r.analyze_step_result["results"]]
        if any(v is None for v in vals):
            print("  (no recorded values to sweep: is the judge NLI / embedding?)")
            return
        values.append((row["label"] == positive, vals))
    labels = [y for y, _ in values]
    print(f"  sweep over thresholds ({report['file']}):")
    for t in [x / 20 for x in range(1, 20)]:
        if name == "hallucination":  # item predicted hallucinated when any claim has p(entail) < t
            predicted = [bool(vals) and any(v < t for v in vals) for _, vals in values]
            frac = [sum(v < t for v in vals) / len(vals) if vals else 0 for _, vals in values]
        else:  # item predicted relevant when the mean statement result is not "no" at threshold t
            predicted = [bool(vals) and sum(v >= t for v in vals) / len(vals) >= 0.5 for _, vals in values]
            frac = [sum(v >= t for v in vals) / len(vals) if vals else 0 for _, vals in values]
        print(f"    t={t:.2f}  balanced_accuracy={fmt(balanced_accuracy(labels, predicted))}  "
              f"auc(share)={fmt(roc_auc(labels, frac))}")
    if name == "answer-relevancy":  # the two thresholds together, scored like the scorer does
        print("  grid: unsure_threshold x yes_threshold -> score AUC, balanced accuracy at score >= 0.3")
        for lo in (0.2, 0.25, 0.3, 0.35, 0.4):
            cells = []
            for hi in (0.45, 0.5, 0.55, 0.6, 0.65, 0.7):
                scores = [sum(1 if v >= hi else 0.3 if v >= lo else 0 for v in vals) / len(vals) if vals else 0
                          for _, vals in values]
                cells.append(f"{hi:.2f}: {fmt(roc_auc(labels, scores))}/"
                             f"{fmt(balanced_accuracy(labels, [x >= 0.29 for x in scores]))}")
            print(f"    unsure {lo:.2f} | " + "  ".join(cells))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scorer", required=True, choices=sorted(FILES))
    parser.add_argument("--judge", default="default", help="'default' (the embedded judge) or a model NAME|PATH")
    parser.add_argument("--bench-dir", default=str(HERE.parent.parent / "shared" / "benchmarks"))
    parser.add_argument("--limit", type=int, default=None, help="rows per file (after a seeded shuffle)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=32, help="items per runner call (one batch per round)")
    parser.add_argument("--reason", default="template", choices=["template", "llm", "none"])
    parser.add_argument("--cut", type=float, default=None, help="decision cut on the score for balanced accuracy")
    parser.add_argument("--file", action="append", help="only these benchmark files")
    parser.add_argument("--joint", action="store_true", help="one request with all verdicts per item (LLM modes)")
    parser.add_argument("--claim-model", help="hallucination with an NLI judge: an LLM that extracts the claims")
    parser.add_argument("--sweep", action="store_true", help="print balanced accuracy over NLI / embedding thresholds")
    parser.add_argument("--out", help="write every result as JSON Lines here")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (1 is much faster when other jobs share the CPU)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    extra = {}
    if args.joint:
        extra[{"hallucination": "per_claim", "answer-relevancy": "per_statement", "bias": "per_opinion"}[args.scorer]] = False
    if args.claim_model:
        extra["claim_model"] = args.claim_model
    scorer = make_scorer(args.scorer, args.judge, args.reason, extra)
    judge = getattr(scorer, "judge", None)
    print(f"scorer {scorer.id}  judge {getattr(judge, 'name', '-')}  options {scorer.options()}")
    cut = DEFAULT_CUT[args.scorer] if args.cut is None else args.cut
    rule = CUT_RULE[args.scorer]
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    bench_dir = Path(args.bench_dir)
    for file_name, (kind, positive, _) in FILES[args.scorer].items():
        if args.file and file_name not in args.file:
            continue
        path = bench_dir / file_name
        rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
        random.Random(args.seed).shuffle(rows)
        rows = rows[:args.limit] if args.limit else rows
        report = bench_file(scorer, path, kind, positive, rows, args.chunk, cut, rule, out)
        shown = {k: v for k, v in report.items() if not k.startswith("_")}
        for key in ("balanced_accuracy", "roc_auc"):
            if key in shown:
                shown[key] = None if shown[key] is None else round(shown[key], 3)
        print(json.dumps(shown))
        if args.sweep and kind != "pairs":
            sweep(args.scorer, report, rows, positive)
        sys.stdout.flush()
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
