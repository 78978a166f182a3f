"""Completeness: how many of the input's key elements the output covers (no LLM, deterministic)."""

from __future__ import annotations

from ..runner import Ask
from ..text.elements import is_covered, key_elements
from ..text.spacy_judge import SpacyJudge, default_spacy_judge
from ..types import ParseRequest
from .base import ScoreItem, Scorer


class CompletenessScorer(Scorer):
    id = "completeness-scorer"
    name = "Completeness Scorer"
    description = "Checks whether the output covers the key elements (nouns, verbs, topics, terms) of the input."

    def __init__(self, judge: SpacyJudge | None = None):
        self.judge = judge or default_spacy_judge()

    def judges(self) -> list:
        return [self.judge]

    def steps(self, item: ScoreItem):
        input_text, output_text = item.input_text, item.output_text
        parsed_input, parsed_output = yield Ask(self.judge, (ParseRequest(input_text), ParseRequest(output_text)))
        input_elements = key_elements(parsed_input)
        output_elements = key_elements(parsed_output)
        if input_elements:
            covered = sum(is_covered(element, output_elements) for element in input_elements)
            score = covered / len(input_elements)
        else:  # nothing asked: complete only if nothing was answered either
            score = 1.0 if not output_elements else 0.0
        output_set = set(output_elements)
        return self.result(
            item,
            score,
            preprocess_step_result={
                "inputElements": input_elements,
                "outputElements": output_elements,
                "missingElements": [e for e in input_elements if e not in output_set],
                "elementCounts": {"input": len(input_elements), "output": len(output_elements)},
            },
            judge=self.judge.name,
        )


def create_completeness_scorer() -> CompletenessScorer:
    return CompletenessScorer()
