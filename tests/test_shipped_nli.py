"""The shipped NLI cross-encoder (models/evallocal-nli-minilm-l6) loads offline and works."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evallocal.hashing import file_sha256

MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "evallocal-nli-minilm-l6"

# hand-written pairs, not benchmark rows
ENTAILED = [
    ("The cat is sleeping on the red sofa in the living room.", "A cat is asleep on a sofa."),
    ("Maria bought three apples and two oranges at the market on Monday.", "Maria bought apples."),
    ("The company reported a net profit of $8 million in the third quarter.",
     "The company made a profit in the third quarter."),
    ("John drove from Paris to Berlin last week to visit his sister.", "John visited his sister."),
]
CONTRADICTED = [
    ("The cat is sleeping on the red sofa in the living room.", "The cat is running in the garden."),
    ("Maria bought three apples and two oranges at the market on Monday.", "Maria bought nothing at the market."),
    ("The company reported a net profit of $8 million in the third quarter.",
     "The company reported a net loss in the third quarter."),
    ("John drove from Paris to Berlin last week to visit his sister.", "John has never been to Berlin."),
]


def test_sha256sums_match_files():
    sums = MODEL_DIR / "SHA256SUMS"
    assert sums.is_file(), "SHA256SUMS missing"
    listed = {}
    for line in sums.read_text().splitlines():
        if not line.strip():
            continue
        digest, name = line.split(None, 1)
        listed[name.lstrip("*").strip()] = digest
    on_disk = {p.name for p in MODEL_DIR.iterdir() if p.is_file() and p.name != "SHA256SUMS"}
    assert set(listed) == on_disk, f"SHA256SUMS lists {sorted(listed)}, directory has {sorted(on_disk)}"
    for name, digest in listed.items():
        assert file_sha256(MODEL_DIR / name) == digest, f"hash mismatch for {name}"


def test_shipped_weights_are_small_fp16_safetensors():
    st = MODEL_DIR / "model.safetensors"
    assert st.is_file()
    assert st.stat().st_size <= 50 * 1024 * 1024
    assert not list(MODEL_DIR.glob("*.bin")), "only safetensors are shipped"
    cfg = json.loads((MODEL_DIR / "config.json").read_text())
    assert {int(k): v for k, v in cfg["id2label"].items()} == {0: "entailment", 1: "neutral", 2: "contradiction"}
    assert cfg["label2id"] == {"entailment": 0, "neutral": 1, "contradiction": 2}


@pytest.fixture(scope="module")
def nli():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    os.environ["HF_HUB_OFFLINE"] = "1"
    tok = transformers.AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        MODEL_DIR, local_files_only=True, dtype=torch.float32).eval()
    label_ids = {v: int(k) for k, v in model.config.id2label.items()}

    def probs(pairs):
        batch = tok([p for p, _ in pairs], [h for _, h in pairs], padding=True, truncation="only_first",
                    max_length=256, return_tensors="pt")
        with torch.no_grad():
            return torch.softmax(model(**batch).logits.float(), dim=-1)

    return probs, label_ids


def test_entailed_pairs_score_higher_than_contradicted(nli):
    probs, ids = nli
    pe = probs(ENTAILED)[:, ids["entailment"]]
    pc = probs(CONTRADICTED)[:, ids["entailment"]]
    for i in range(len(ENTAILED)):
        assert pe[i] > pc[i], f"pair {i}: p(entail) {pe[i]:.3f} (entailed) <= {pc[i]:.3f} (contradicted)"
    assert pe.mean() - pc.mean() > 0.3


def test_argmax_on_clear_cases(nli):
    probs, ids = nli
    pe = probs(ENTAILED).argmax(-1).tolist()
    pc = probs(CONTRADICTED).argmax(-1).tolist()
    correct = sum(x == ids["entailment"] for x in pe) + sum(x == ids["contradiction"] for x in pc)
    # a small model: allow one miss in eight clear cases
    assert correct >= len(pe) + len(pc) - 1, f"argmax entailed={pe} contradicted={pc}"
