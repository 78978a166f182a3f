"""Plain data shared by scorers, the runner and the judges.

Requests are what a scorer asks a judge; the judge answers each with a response value or a
`JudgeFailure`. `ScoreResult` is what a scorer produces for one item.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping

# --- judge requests -------------------------------------------------------------------------


@dataclass(frozen=True)
class ParseRequest:
    """Linguistic analysis of a text (spaCy). Answer: `ParsedText`."""

    text: str
    kind: ClassVar[str] = "parse"

    def size(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class GenerateRequest:
    """Structured generation. Answer: the parsed JSON object, valid against `schema`.

    `messages` is a tuple of (role, content) pairs; `schema` a JSON schema, stored as a JSON
    string so requests stay hashable and cache keys stable. Key order is kept, not sorted: a
    constrained decoder generates properties in schema order (e.g. "reason" before "verdict").
    """

    messages: tuple[tuple[str, str], ...]
    schema_json: str
    max_new_tokens: int | None = None
    kind: ClassVar[str] = "generate"

    @classmethod
    def build(cls, messages, schema: Mapping, max_new_tokens: int | None = None) -> "GenerateRequest":
        pairs = tuple((m["role"], m["content"]) if isinstance(m, Mapping) else tuple(m) for m in messages)
        return cls(pairs, json.dumps(schema, ensure_ascii=False), max_new_tokens)

    @property
    def schema(self) -> dict:
        return json.loads(self.schema_json)

    def size(self) -> int:
        return sum(len(content) for _, content in self.messages)


@dataclass(frozen=True)
class PairRequest:
    """Pair classification (NLI). Answer: {"entailment": p, "neutral": p, "contradiction": p}."""

    premise: str
    hypothesis: str
    kind: ClassVar[str] = "classify_pair"

    def size(self) -> int:
        return len(self.premise) + len(self.hypothesis)


@dataclass(frozen=True)
class EmbedRequest:
    """Sentence embedding. Answer: a tuple of floats (unit length)."""

    text: str
    kind: ClassVar[str] = "embed"

    def size(self) -> int:
        return len(self.text)


Request = ParseRequest | GenerateRequest | PairRequest | EmbedRequest


@dataclass(frozen=True)
class JudgeFailure:
    """A judge could not answer one request. The item that asked becomes not scorable."""

    error: str
    raw: str | None = None


# --- judge answers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    text: str
    pos: str  # universal POS tag
    lemma: str  # base form for verbs and auxiliaries; other tokens carry their text


@dataclass(frozen=True)
class ParsedText:
    """What spaCy found in a text: plain data, so it can be cached and sent across processes."""

    tokens: tuple[Token, ...]
    noun_phrases: tuple[str, ...]  # determiner/adjective/number runs ending in a noun
    topics: tuple[str, ...]  # runs of proper nouns: people, places, organisations
    sentences: tuple[str, ...]


# --- results ----------------------------------------------------------------------------------

_CAMEL_KEYS = {
    "run_id": "runId",
    "scorer_id": "scorerId",
    "preprocess_step_result": "preprocessStepResult",
    "preprocess_prompt": "preprocessPrompt",
    "analyze_step_result": "analyzeStepResult",
    "analyze_prompt": "analyzePrompt",
    "generate_reason_prompt": "generateReasonPrompt",
    "raw_reply": "rawReply",
}


@dataclass
class ScoreResult:
    """One scorer's verdict on one item.

    `score is None` means *not scorable*: `error` says why (and `raw_reply` holds the judge's
    raw answer when there was one). A failure is never reported as a score of 0.
    """

    scorer_id: str
    run_id: str
    score: float | None
    reason: str | None = None
    preprocess_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_step_result: Any = None
    analyze_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: str | None = None
    error: str | None = None
    raw_reply: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def scorable(self) -> bool:
        return self.score is not None

    def to_dict(self) -> dict:
        """JSON-ready dict with the reference's camelCase keys (plus evallocal's own fields)."""
        out = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            out[_CAMEL_KEYS.get(f.name, f.name)] = getattr(self, f.name)
        out.update(self.extra)
        return out
