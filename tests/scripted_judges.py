"""Scripted fake judges for scorer tests: answers come from a script, every call is counted."""

from __future__ import annotations

import json
from typing import Any, Callable

from evallocal.judges.base import Judge
from evallocal.types import JudgeFailure


class ScriptedJudge(Judge):
    """Answers each request with `respond(request)`; records every `answer()` call."""

    def __init__(self, respond: Callable[[Any], Any], kinds=("generate",), name: str = "scripted"):
        self.respond = respond
        self.kinds = frozenset(kinds)
        self.name = name
        self.calls: list[list] = []

    def _answer(self, requests):
        self.calls.append(list(requests))
        return [self.respond(r) for r in requests]

    @property
    def requests(self) -> list:
        return [r for call in self.calls for r in call]


def step_key(request) -> str:
    """Which step is asking: "verdict" / "result" for one-verdict requests, else the schema's
    first property ("claims", "statements", "opinions", "verdicts", "results", "reason")."""
    props = json.loads(request.schema_json)["properties"]
    for key in ("verdict", "result"):
        if key in props:
            return key
    return next(iter(props))


def prompt_of(request) -> str:
    return request.messages[-1][1]


def llm(script: dict, name: str = "fake-llm") -> ScriptedJudge:
    """A fake LLM: `script[first schema key]` is the answer, or a callable(request) giving it.

    For one-verdict-per-request steps (first key "reason" or "result") a list in the script is
    consumed in order, one entry per request.
    """
    queues = {k: list(v) for k, v in script.items() if k in ("verdict", "result") and isinstance(v, list)}

    def respond(request):
        key = step_key(request)
        value = script.get(key)
        if key in queues:
            if not queues[key]:
                return JudgeFailure("script ran out of answers")
            value = queues[key].pop(0)
        if callable(value):
            value = value(request)
        if isinstance(value, JudgeFailure):
            return value
        if value is None:
            return JudgeFailure(f"no scripted answer for {key!r}")
        if key in ("verdict", "result") and isinstance(value, str):
            return {key: value, "reason": f"scripted {value}"}
        if isinstance(value, dict):
            return value
        return {key: value}

    return ScriptedJudge(respond, ("generate",), name)


def nli(entailment: Callable[[str, str], float], name: str = "fake-nli") -> ScriptedJudge:
    def respond(request):
        p = entailment(request.premise, request.hypothesis)
        return {"entailment": p, "neutral": (1 - p) / 2, "contradiction": (1 - p) / 2}

    return ScriptedJudge(respond, ("classify_pair",), name)


def embedder(vectors: dict[str, tuple], name: str = "fake-embed") -> ScriptedJudge:
    return ScriptedJudge(lambda r: vectors[r.text], ("embed",), name)
