"""Scorers: each decides what to ask its judges and turns the answers into a score.

`SCORERS` maps the CLI's scorer names to their factories. Per-item data the CLI passes: `input`,
`output`, and for hallucination a `context` (string or list of strings) that it puts into
`ScoreItem.request_context["context"]`; the hallucination scorer uses it unless `get_context`
is given (get_context > per-item context > the factory's static `context`).
"""

from .answer_relevancy import create_answer_relevancy_scorer
from .bias import create_bias_scorer
from .completeness import create_completeness_scorer
from .hallucination import create_hallucination_scorer
from .tool_results import extract_tool_results

SCORERS = {
    "completeness": create_completeness_scorer,
    "hallucination": create_hallucination_scorer,
    "answer-relevancy": create_answer_relevancy_scorer,
    "bias": create_bias_scorer,
}

__all__ = ["SCORERS", "create_answer_relevancy_scorer", "create_bias_scorer", "create_completeness_scorer",
           "create_hallucination_scorer", "extract_tool_results"]
