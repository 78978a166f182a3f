"""Sentence embeddings with plain transformers: mean pooling over tokens, then L2 normalisation.

This reproduces sentence-transformers' all-MiniLM-L6-v2 pipeline (Transformer -> mean Pooling ->
Normalize) without depending on sentence-transformers. The maximum sequence length comes from
`sentence_bert_config.json` when the folder has one (256 for all-MiniLM-L6-v2), else the
model window.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ..types import EmbedRequest
from . import _torch
from .base import Judge
from .batching import AdaptiveBatchSize, run_batched


class EmbeddingJudge(Judge):
    kinds = frozenset({"embed"})

    def __init__(
        self,
        model_dir: str | Path,
        *,
        name: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_size: int = 128,
        max_batch_tokens: int | None = 65536,
        files: dict[str, str] | None = None,
    ):
        self.model_dir = Path(model_dir)
        self.name = name or self.model_dir.name
        self.batch = AdaptiveBatchSize(max_batch_size, max_batch_tokens)
        self.files = {k: v for k, v in (files or {}).items() if v and v != "unverified"}
        self._lock = threading.Lock()
        self._loaded = False
        # settled now, not at load time: describe() (cache keys, manifests) must not change
        self.device = _torch.pick_device(device)
        self.dtype = _torch.pick_dtype(self.device, dtype or ("auto" if self.device.startswith("cuda") else "float32"))

    def load(self) -> "EmbeddingJudge":
        with self._lock:
            if self._loaded:
                return self
            _torch.offline()
            import torch
            from transformers import AutoModel, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir, **_torch.LOAD_KWARGS)
            self.model = AutoModel.from_pretrained(self.model_dir, dtype=self.dtype, **_torch.LOAD_KWARGS)
            self.model.to(self.device).eval()
            window = int(getattr(self.model.config, "max_position_embeddings", 512))
            st_config = self.model_dir / "sentence_bert_config.json"
            if st_config.is_file():
                window = min(window, int(json.loads(st_config.read_text()).get("max_seq_length", window)))
            self.max_length = window
            self._torch = torch
            self._loaded = True
            return self

    def _answer(self, requests: list[EmbedRequest]) -> list[tuple[float, ...]]:
        self.load()
        texts = [r.text for r in requests]
        sizes = [min(self.max_length, len(t) // 3 + 2) for t in texts]
        return run_batched(texts, sizes, self._embed, self.batch)

    def _embed(self, texts: list[str]) -> list[tuple[float, ...]]:
        torch = self._torch
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return [tuple(row) for row in pooled.cpu().tolist()]

    def describe(self) -> dict:
        """Stable identity (the same before and after loading): cache keys and manifests use it."""
        info = super().describe()
        info.update({"backend": "transformers-mean-pooling", "pooling": "mean, L2-normalised",
                     "local_path": str(self.model_dir), "device": self.device,
                     "dtype": _torch.dtype_name(self.dtype)})
        if self.files:
            info["files_sha256"] = dict(self.files)
        return info


__all__ = ["EmbeddingJudge"]
