#!/usr/bin/env python
"""Measure evallocal's NLI cross-encoder on the hallucination benchmarks.

Item scoring follows the hallucination scorer's NLI mode:
  * the output is split into sentences (claims);
  * the context is split into overlapping sentence windows that fit the model's window
    (max_length minus the longest claim of the item);
  * per claim: p_entail = max over windows of p(entailment), p_contra = max of p(contradiction);
  * a claim is supported when p_entail >= threshold; the item's hallucination score is the
    fraction of unsupported claims (an item is predicted hallucinated when any claim is);
  * continuous item scores for ROC AUC: 1 - min over claims of p_entail ("min"),
    1 - mean over claims of p_entail ("mean").

The default threshold is chosen on the nli-train validation split (the same 3% premise-group
split train_nli.py validates on), as the threshold that maximises pair-level balanced accuracy
of p_entail >= t against label_bin. It is never tuned on the benchmarks.

    HF_HUB_OFFLINE=1 python scripts/eval_nli.py --model models/evallocal-nli-minilm-l6 \
        --choose-threshold --out /tmp/nli-runs/eval.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_nli as T  # noqa: E402

BENCH = Path("/work/shared/benchmarks")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "evallocal-nli-minilm-l6"


class NLI:
    def __init__(self, path, threads: int = 2, bf16: bool = False, max_length: int = T.MAX_LEN, batch_size: int = 32):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        torch.set_num_threads(threads)
        self.tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            path, local_files_only=True, dtype=torch.float32).eval()
        lab = {v.lower(): int(k) for k, v in self.model.config.id2label.items()}
        self.i_ent, self.i_con = lab["entailment"], lab["contradiction"]
        self.bf16, self.max_length, self.batch_size = bf16, max_length, batch_size
        self.n_pairs, self.secs = 0, 0.0

    def ntok(self, texts: list[str]) -> list[int]:
        return [len(x) for x in self.tok(texts, add_special_tokens=False)["input_ids"]] if texts else []

    @torch.no_grad()
    def probs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Rows of (p_entail, p_contradiction) for (premise, hypothesis) pairs."""
        if not pairs:
            return np.zeros((0, 2), dtype=np.float32)
        t = time.time()
        enc = T.encode(self.tok, [dict(premise=p, hypothesis=h) for p, h in pairs], self.max_length)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]) + len(enc[i][1]))
        out = np.zeros((len(enc), 2), dtype=np.float32)
        for j in range(0, len(order), self.batch_size):
            b = order[j: j + self.batch_size]
            ids, tt, am = T.collate(self.tok, [enc[i] for i in b])
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                lg = self.model(input_ids=ids, token_type_ids=tt, attention_mask=am).logits
            p = torch.softmax(lg.float(), -1).numpy()
            out[b, 0] = p[:, self.i_ent]
            out[b, 1] = p[:, self.i_con]
        self.secs += time.time() - t
        self.n_pairs += len(pairs)
        return out

    def windows(self, context: str, claim_tokens: int) -> list[str]:
        """Overlapping sentence windows of the context that fit next to the claim."""
        budget = max(64, self.max_length - 3 - min(claim_tokens, T.MAX_HYP_TOKENS))
        sents = T.split_sentences(context) or [context]
        lens = self.ntok(sents)
        wins, i, n = [], 0, len(sents)
        while i < n:
            j, size = i, 0
            while j < n and (j == i or size + lens[j] <= budget):
                size += lens[j]
                j += 1
            wins.append(" ".join(sents[i:j]))
            if j >= n:
                break
            half, k = 0, i
            while k < j - 1 and half < size / 2:
                half += lens[k]
                k += 1
            i = max(k, i + 1)
        return wins

    def score_item(self, context: str, claims: list[str]) -> dict:
        claims = [c for c in claims if c.strip()] or [""]
        wins = self.windows(context, max(self.ntok(claims)))
        pairs = [(w, c) for c in claims for w in wins]
        pr = self.probs(pairs).reshape(len(claims), len(wins), 2)
        return dict(p_entail=pr[:, :, 0].max(1).tolist(), p_contra=pr[:, :, 1].max(1).tolist(),
                    n_windows=len(wins), n_pairs=len(pairs))


def item_metrics(scored: list[dict], labels: list[int], thr: float) -> dict:
    """labels: 1 = hallucinated / inconsistent."""
    pe = [np.array(s["p_entail"]) for s in scored]
    frac = np.array([float((p < thr).mean()) for p in pe])
    s_min = np.array([1 - p.min() for p in pe])
    s_mean = np.array([1 - p.mean() for p in pe])
    s_con = np.array([max(s["p_contra"]) for s in scored])
    return dict(
        n=len(labels), n_hallucinated=int(sum(labels)),
        auc_min=T.roc_auc(s_min, labels), auc_mean=T.roc_auc(s_mean, labels),
        auc_fraction_unsupported=T.roc_auc(frac, labels), auc_max_contradiction=T.roc_auc(s_con, labels),
        bacc_any_unsupported=T.balanced_accuracy(frac > 0, labels),
        bacc_half_unsupported=T.balanced_accuracy(frac >= 0.5, labels),
    )


def load_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(x) for x in fh if x.strip()]


def choose_threshold(nli: NLI, seed: int, max_val_pairs: int) -> dict:
    _, val, _, _ = T.build_datasets(seed, 1000, max_val_pairs)
    pr = nli.probs([(d["premise"], d["hypothesis"]) for d in val])[:, 0]
    y = np.array([1 if d["label_bin"] == "supported" else 0 for d in val])
    grid = np.round(np.arange(0.05, 0.951, 0.01), 2)
    baccs = [T.balanced_accuracy(pr >= t, y) for t in grid]
    k = int(np.argmax(baccs))
    return dict(threshold=float(grid[k]), val_bacc=float(baccs[k]), val_auc=T.roc_auc(pr, y), n_val=len(val),
                val_bacc_at_0_5=T.balanced_accuracy(pr >= 0.5, y))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--threshold", type=float, help="claim support threshold (default: from the model's config, else 0.5)")
    ap.add_argument("--choose-threshold", action="store_true", help="choose it on the nli-train validation split")
    ap.add_argument("--seed", type=int, default=13, help="seed of the training run (defines the validation split)")
    ap.add_argument("--max-val-pairs", type=int, default=1000)
    ap.add_argument("--limit", type=int, help="only the first N items per benchmark (smoke test)")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (default: float32)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    nli = NLI(args.model, threads=args.threads, bf16=args.bf16)
    res: dict = dict(model=str(args.model), bf16=args.bf16, threads=args.threads)
    if args.choose_threshold:
        res["threshold_choice"] = choose_threshold(nli, args.seed, args.max_val_pairs)
        thr = res["threshold_choice"]["threshold"]
        print("threshold choice:", res["threshold_choice"], flush=True)
    elif args.threshold is not None:
        thr = args.threshold
    else:
        thr = float(getattr(nli.model.config, "evallocal_default_threshold", 0.5))
    res["threshold"] = thr
    nli.n_pairs, nli.secs = 0, 0.0

    # SummEdits: claims = sentences of the summary
    rows = load_jsonl(BENCH / "halluc_summedits.jsonl")[: args.limit]
    sc = [nli.score_item(r["context"], T.split_sentences(r["output"])) for r in rows]
    y = [1 if r["label"] == "inconsistent" else 0 for r in rows]
    res["summedits"] = item_metrics(sc, y, thr)
    res["summedits"]["pairs"] = sum(s["n_pairs"] for s in sc)
    by_dom: dict = {}
    for r, s, l in zip(rows, sc, y):
        by_dom.setdefault(r["domain"], ([], []))
        by_dom[r["domain"]][0].append(s)
        by_dom[r["domain"]][1].append(l)
    res["summedits_by_domain_auc_min"] = {d: round(T.roc_auc([1 - min(s["p_entail"]) for s in v[0]], v[1]), 4)
                                          for d, v in sorted(by_dom.items())}
    print("summedits:", res["summedits"], flush=True)

    # HaluEval QA: (a) claims = sentences of the answer alone (what the scorer sees),
    # (b) one claim = question + answer (a short answer like "Madrid" is not a proposition)
    rows = load_jsonl(BENCH / "halluc_halueval_qa.jsonl")[: args.limit]
    y = [1 if r["label"] == "hallucinated" else 0 for r in rows]
    sa = [nli.score_item(r["context"], T.split_sentences(r["output"])) for r in rows]
    res["halueval_qa_answer_only"] = item_metrics(sa, y, thr)
    sq = [nli.score_item(r["context"], [f"{r['question'].strip()} {r['output'].strip()}"]) for r in rows]
    res["halueval_qa_question_plus_answer"] = item_metrics(sq, y, thr)
    print("halueval_qa answer only:", res["halueval_qa_answer_only"], flush=True)
    print("halueval_qa question+answer:", res["halueval_qa_question_plus_answer"], flush=True)

    res["pairs_scored"] = nli.n_pairs
    res["inference_seconds"] = round(nli.secs, 1)
    res["pairs_per_second"] = round(nli.n_pairs / max(nli.secs, 1e-9), 1)
    print(f"pairs/s: {res['pairs_per_second']} ({nli.n_pairs} pairs in {nli.secs:.0f}s, "
          f"{'bf16' if args.bf16 else 'fp32'}, {args.threads} threads)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
