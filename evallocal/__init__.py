"""evallocal: score LLM outputs offline with local open models.

The public API. Heavy libraries (torch, spaCy) load only when a scorer first needs them.
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "create_completeness_scorer": "evallocal.scorers.completeness",
    "create_hallucination_scorer": "evallocal.scorers.hallucination",
    "create_answer_relevancy_scorer": "evallocal.scorers.answer_relevancy",
    "create_bias_scorer": "evallocal.scorers.bias",
    "extract_tool_results": "evallocal.scorers.hallucination",
    "run_evals": "evallocal.evals",
    "score_calls": "evallocal.live",
    "LiveScorer": "evallocal.live",
    "ScoreResult": "evallocal.types",
    "ScoreItem": "evallocal.scorers.base",
    "Scorer": "evallocal.scorers.base",
    "round_score": "evallocal.scoring",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evallocal' has no attribute {name!r}")
