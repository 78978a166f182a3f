"""One-time conversion of a GGUF checkpoint into a safetensors folder transformers loads fast.

Loading a GGUF through transformers de-quantises every tensor (about 30 s for SmolLM2-135M on
2 busy CPU cores); the converted folder then loads in about a second. The folder lives in the
evallocal cache ($EVALLOCAL_CACHE, else $XDG_CACHE_HOME/evallocal, else ~/.cache/evallocal),
named after the GGUF file's sha256, and is written to a temporary folder then renamed, so a
crash never leaves a half-written model behind. Weights are stored in fp32 (the exact
de-quantised values); the judge casts them to its dtype when loading.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from . import _torch
from .hf_llm import HFLLMJudge

log = logging.getLogger("evallocal.judges.gguf")

_MARKER = "evallocal-gguf-source.json"


def cache_dir() -> Path:
    root = os.environ.get("EVALLOCAL_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "evallocal"


def converted_folder(gguf_path: Path, sha256: str) -> Path:
    """The safetensors folder for this GGUF file, converting it on first use."""
    gguf_path = Path(gguf_path)
    target = cache_dir() / "converted" / f"{gguf_path.stem}-{sha256[:16]}"
    marker = target / _MARKER
    if marker.is_file():
        try:
            if json.loads(marker.read_text()).get("sha256") == sha256:
                return target
        except (OSError, ValueError):
            pass
    log.info("converting %s to safetensors in %s (once)", gguf_path.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        _convert(gguf_path, work)
        (work / _MARKER).write_text(json.dumps({"source": gguf_path.name, "sha256": sha256}))
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _convert(gguf_path: Path, out: Path) -> None:
    _torch.offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = gguf_path.parent, gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, **_torch.LOAD_KWARGS)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, **_torch.LOAD_KWARGS)
    # transformers marks GGUF-loaded models as quantised and refuses to save them: rebuild a
    # plain model from the same config and copy the de-quantised weights across
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


class GGUFLLMJudge(HFLLMJudge):
    """An `HFLLMJudge` over a GGUF file: converted to safetensors (cached) on first load."""

    def __init__(self, gguf_path: str | Path, sha256: str, **kwargs):
        super().__init__(gguf_path, **kwargs)
        self.gguf_path = Path(gguf_path)
        self.gguf_sha256 = sha256

    def load(self) -> "GGUFLLMJudge":
        with self._lock:
            if not self._loaded:
                self.model_dir = converted_folder(self.gguf_path, self.gguf_sha256)
        return super().load()

    def describe(self) -> dict:
        info = super().describe()
        info["local_path"] = str(self.gguf_path)  # not the converted folder: stable before/after load
        info["gguf"] = self.gguf_path.name
        info["files_sha256"] = {self.gguf_path.name: self.gguf_sha256}
        return info
