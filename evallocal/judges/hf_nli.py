"""Pair classification (NLI / factual consistency) with a local cross-encoder.

`HFNLIJudge` answers `PairRequest(premise, hypothesis)` with
`{"entailment": p, "neutral": p, "contradiction": p}`.

Labels come from `config.id2label`, compared case-insensitively:
  * 3-label NLI models name entailment / neutral / contradiction (any case; "entails",
    "contradict", "not_entailment" are understood too);
  * 2-label fact checkers name supported / unsupported, consistent / inconsistent, or
    entailment / not_entailment: entailment = p(supported), contradiction = p(unsupported),
    neutral = 0;
  * generic names (LABEL_0, LABEL_1, ...) carry no meaning: that is an error asking for an
    explicit `label_map={"entailment": 0, "contradiction": 1, ...}`.

Long premises: when premise + hypothesis do not fit the model window, the premise is split
into sentences (a simple regex) and packed into overlapping windows of consecutive sentences
(each window shares its last sentence with the next); every window is scored against the
hypothesis and the results are combined as
    entailment    = max over windows of p(entailment)     (supported somewhere is supported)
    contradiction = max over windows of p(contradiction)  (contradicted somewhere is contradicted)
    neutral       = clip(1 - entailment - contradiction, 0, 1)
so the three may sum to more than 1 when one window entails and another contradicts; a premise
that fits the window gives the model's probabilities unchanged. A single sentence longer than
the window is truncated.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from ..types import PairRequest
from . import _torch
from .base import Judge
from .batching import AdaptiveBatchSize, run_batched

_ENTAIL = {"entailment", "entails", "entailed", "entail", "supported", "support", "consistent", "factual"}
_NEUTRAL = {"neutral", "not_enough_info", "nei"}
_CONTRA = {
    "contradiction", "contradicts", "contradict", "contradicted", "unsupported", "not_supported",
    "inconsistent", "not_entailment", "non_entailment", "hallucinated", "refuted",
}
_SENTENCE_END = re.compile(r"(?:(?<=[.!?。！？])|(?<=[.!?][\"')\]]))\s+")


class LabelMappingError(ValueError):
    """The model's labels cannot be mapped to entailment / neutral / contradiction."""


def label_indices(id2label: dict, label_map: dict[str, int] | None = None) -> dict[str, int | None]:
    """{"entailment": i, "neutral": i | None, "contradiction": i} from a config's id2label."""
    if label_map:
        unknown = set(label_map) - {"entailment", "neutral", "contradiction"}
        if unknown or "entailment" not in label_map or "contradiction" not in label_map:
            raise LabelMappingError(
                f"label_map must name 'entailment' and 'contradiction' (and optionally 'neutral'), got {label_map}"
            )
        return {"entailment": label_map["entailment"], "neutral": label_map.get("neutral"),
                "contradiction": label_map["contradiction"]}
    found: dict[str, int | None] = {"entailment": None, "neutral": None, "contradiction": None}
    for raw_id, raw_name in (id2label or {}).items():
        name = re.sub(r"[\s-]+", "_", str(raw_name).strip().lower())
        slot = "entailment" if name in _ENTAIL else "neutral" if name in _NEUTRAL else "contradiction" if name in _CONTRA else None
        if slot is None:
            continue
        if found[slot] is not None:
            raise LabelMappingError(f"two labels map to {slot}: {id2label}")
        found[slot] = int(raw_id)
    if found["entailment"] is None or found["contradiction"] is None:
        raise LabelMappingError(
            f"cannot tell which output is entailment and which is contradiction from id2label={id2label}. "
            "Generic names like LABEL_0 carry no meaning: pass label_map={'entailment': i, "
            "'neutral': j, 'contradiction': k} (see the model card), or fix id2label in config.json"
        )
    if len(id2label) > 2 and found["neutral"] is None:
        raise LabelMappingError(f"a {len(id2label)}-label model needs a neutral label; id2label={id2label}")
    return found


def split_sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    return [p for p in parts if p]


class HFNLIJudge(Judge):
    """An AutoModelForSequenceClassification cross-encoder from a local folder."""

    kinds = frozenset({"classify_pair"})

    def __init__(
        self,
        model_dir: str | Path | None,
        *,
        name: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_size: int = 64,
        max_batch_tokens: int | None = 32768,
        max_length: int | None = None,
        label_map: dict[str, int] | None = None,
        files: dict[str, str] | None = None,
        model: Any = None,
        tokenizer: Any = None,
    ):
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.name = name or (self.model_dir.name if self.model_dir else "nli")
        self.batch = AdaptiveBatchSize(max_batch_size, max_batch_tokens)
        self._max_length = max_length
        self.label_map = label_map
        self.files = {k: v for k, v in (files or {}).items() if v and v != "unverified"}
        self._lock = threading.Lock()
        self._loaded = False
        self.model, self.tokenizer = model, tokenizer
        # settled now, not at load time: describe() (cache keys, manifests) must not change
        self.device = _torch.pick_device(device)
        # fp32 on CPU keeps the probabilities exact; bf16/fp16 on a GPU
        self.dtype = _torch.pick_dtype(self.device, dtype or ("auto" if self.device.startswith("cuda") else "float32"))

    def load(self) -> "HFNLIJudge":
        with self._lock:
            if self._loaded:
                return self
            _torch.offline()
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            if self.tokenizer is None:
                self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir, **_torch.LOAD_KWARGS)
            if self.model is None:
                self.model = AutoModelForSequenceClassification.from_pretrained(
                    self.model_dir, dtype=self.dtype, **_torch.LOAD_KWARGS
                )
            self.model.to(self.device).eval()
            self.labels = label_indices(self.model.config.id2label, self.label_map)
            # the model window, capped at 512 tokens (cross-encoders are trained on short pairs)
            window = self._max_length or getattr(self.model.config, "max_position_embeddings", 512)
            self.max_length = int(min(window, self.tokenizer.model_max_length or window, 512))
            self.special = self.tokenizer.num_special_tokens_to_add(pair=True)
            self._torch = torch
            self._loaded = True
            return self

    # --- windows ------------------------------------------------------------------------------

    def _ntokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def windows(self, premise: str, hypothesis: str) -> list[str]:
        """The premise as one piece if it fits beside the hypothesis, else overlapping windows."""
        self.load()
        budget = self.max_length - self.special - self._ntokens(hypothesis)
        if budget <= 8 or self._ntokens(premise) <= budget:
            return [premise]
        sentences = split_sentences(premise)
        sizes = [self._ntokens(s) + 1 for s in sentences]
        windows: list[str] = []
        start = 0
        while start < len(sentences):
            end, used = start, 0
            while end < len(sentences) and (end == start or used + sizes[end] <= budget):
                used += sizes[end]
                end += 1
            windows.append(" ".join(sentences[start:end]))
            if end >= len(sentences):
                break
            start = end - 1 if end - 1 > start else end  # overlap: repeat the last sentence
        return windows

    # --- answering ----------------------------------------------------------------------------

    def _answer(self, requests: list[PairRequest]) -> list[dict]:
        self.load()
        jobs: list[tuple[int, str, str]] = []
        for i, request in enumerate(requests):
            for window in self.windows(request.premise, request.hypothesis):
                jobs.append((i, window, request.hypothesis))
        sizes = [min(self.max_length, (len(p) + len(h)) // 3 + self.special) for _, p, h in jobs]
        probs = run_batched(jobs, sizes, self._classify, self.batch)
        per_request: list[list] = [[] for _ in requests]
        for (i, _, _), p in zip(jobs, probs):
            per_request[i].append(p)
        return [self._combine(rows) for rows in per_request]

    def _classify(self, jobs: list[tuple[int, str, str]]) -> list[list[float]]:
        torch = self._torch
        enc = self.tokenizer(
            [p for _, p, _ in jobs], [h for _, _, h in jobs],
            truncation="only_first", max_length=self.max_length, padding=True, return_tensors="pt",
        )
        with torch.inference_mode():
            logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits
        return torch.softmax(logits.float(), dim=-1).cpu().tolist()

    def _combine(self, rows: list[list[float]]) -> dict[str, float]:
        e_i, n_i, c_i = self.labels["entailment"], self.labels["neutral"], self.labels["contradiction"]
        if len(rows) == 1:
            row = rows[0]
            return {
                "entailment": float(row[e_i]),
                "neutral": float(row[n_i]) if n_i is not None else 0.0,
                "contradiction": float(row[c_i]),
            }
        entail = max(row[e_i] for row in rows)
        contra = max(row[c_i] for row in rows)
        neutral = min(1.0, max(0.0, 1.0 - entail - contra)) if n_i is not None else 0.0
        return {"entailment": float(entail), "neutral": float(neutral), "contradiction": float(contra)}

    def describe(self) -> dict:
        """Stable identity (the same before and after loading): cache keys and manifests use it."""
        info = super().describe()
        info.update({
            "backend": "transformers-sequence-classification",
            "local_path": str(self.model_dir) if self.model_dir else None,
            "device": self.device,
            "dtype": _torch.dtype_name(self.dtype),
            "max_length": self._max_length,
            "label_map": self.label_map,
            "aggregation": "windows: max entailment, max contradiction, neutral = 1 - both",
        })
        if self.files:
            info["files_sha256"] = dict(self.files)
        return info


__all__ = ["HFNLIJudge", "LabelMappingError", "label_indices", "split_sentences"]
