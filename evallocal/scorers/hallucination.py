"""Hallucination: the share of the output's claims that the context does not back.

Steps (each one `Ask` per item; the runner batches all items and scorers per round):
1. preprocess: claims of the output — an LLM judge extracts them, or, when the judge is an NLI
   cross-encoder and no `claim_model` is given, spaCy's sentences are the claims.
2. analyze: one verdict per claim, "yes" = hallucinated (contradicted or not backed).
   - LLM judge: grammar-constrained JSON, verdict in {"yes","no"}, bounded reason.
   - NLI judge: p(entailment | premise = context joined, hypothesis = claim) >= `nli_threshold`
     -> "no" (supported), else "yes".
3. generateReason: "template" (deterministic, cites the hallucinated claims), "llm" (asks an
   LLM judge: `reason_model`, else `claim_model`, else the default LLM) or "none". Default:
   "llm" with an LLM judge (as the reference), "template" in NLI mode.

Score = hallucinated / verdicts * scale, rounded like the reference; 0 without verdicts (an
empty output has no claims); with claims but no context every claim is unsupported -> scale.

Context, first found wins: `get_context(run=..., step="analyze")` (sync or async, called once per
item), the item's own context (`request_context["context"]`, as the CLI passes a data line's
`context` field), the static `context`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..runner import Ask, unwrap
from ..errors import NotScorable
from ..scoring import round_score
from ..types import PairRequest, ParseRequest
from . import _judged as J
from .base import ScoreItem, Scorer
from .prompts import hallucination as P
from .tool_results import extract_tool_results

MAX_CLAIMS = 8
CLAIM_CHARS = 160
REASON_CHARS = 100
# NLI mode: a claim is supported when p(entailment) >= this. Measured with the shipped
# evallocal-nli-minilm-l6 on the shared samples (scripts/bench_quality.py --scorer hallucination
# --sweep; item predicted hallucinated when any sentence falls below t). Balanced accuracy,
# summedits / halueval_qa: t=0.25 0.521/0.639, t=0.30 0.526/0.655, t=0.40 0.520/0.629,
# t=0.50 0.496/0.606. The mean is flat within 0.02 over 0.25-0.45 and highest at 0.3: we take
# the round 0.3 (a plateau value, not a per-row fit). SummEdits stays near chance at every t:
# the small cross-encoder does not catch subtle edits in long documents.
DEFAULT_NLI_THRESHOLD = 0.3

# Verdict count: one request per claim (`per_claim=True`, the default) rather than one request
# whose schema fixes minItems = maxItems = n (`per_claim=False`, kept as an option). Both give
# exactly n verdicts. Measured with SmolLM2-135M on 12 HaluEval QA items (CPU, 1 thread, same
# claims): per-claim 179 s, joint 254 s, 0 not scorable either way, 15/20 verdicts agree. Per
# claim is faster because decoding is memory-bound: all verdict rows of a round decode side by
# side, so a round costs the longest single verdict instead of the sum of an item's verdicts;
# each verdict also sees only its own claim, so a small judge cannot drift between claims. Its
# cost is the context's prefill once per claim, which is cheap next to decoding.
CLAIMS_SCHEMA = J.obj(claims=J.array(J.string(CLAIM_CHARS), MAX_CLAIMS))
VERDICT_SCHEMA = J.obj(reason=J.string(REASON_CHARS), verdict=J.enum(["yes", "no"]))
REASON_SCHEMA = J.obj(reason=J.string(300))


def verdicts_schema(n: int) -> dict:
    """Joint mode: exactly n verdicts (minItems = maxItems = n), in claim order."""
    return J.obj(verdicts=J.array(VERDICT_SCHEMA, n, n))


def hallucination_score(verdicts: list[dict], scale: float = 1) -> float:
    """hallucinated / total * scale, rounded; 0 when there are no verdicts."""
    if not verdicts:
        return 0
    hallucinated = sum(J.norm(v["verdict"]) == "yes" for v in verdicts)
    return round_score(hallucinated / len(verdicts) * scale)


def template_reason(score: float, verdicts: list[dict], context: list[str]) -> str:
    s = J.fmt_score(score)
    if not verdicts:
        return f"The score is {s} because the output makes no claims to check."
    bad = [v["statement"] for v in verdicts if J.norm(v["verdict"]) == "yes"]
    n = len(verdicts)
    if not context:
        return f"The score is {s} because no context was given, so none of the {n} claims can be supported: {J.quote_list(bad)}."
    if not bad:
        return f"The score is {s} because all {n} claims are supported by the context."
    return (f"The score is {s} because {len(bad)} of {n} claims are contradicted by or missing from the context: "
            f"{J.quote_list(bad)}.")


class HallucinationScorer(Scorer):
    id = "hallucination-scorer"
    name = "Hallucination Scorer"
    description = "Share of the output's claims that contradict or are not backed by the context (higher = worse)."

    def __init__(self, judge, *, scale: float = 1, context: Any = None, get_context: Callable | None = None,
                 reason: str | None = None, claim_judge=None, reason_judge=None,
                 nli_threshold: float = DEFAULT_NLI_THRESHOLD, per_claim: bool = True,
                 grounding: float = J.DEFAULT_GROUNDING):
        self.judge = judge
        self.mode = "nli" if "classify_pair" in judge.kinds else "llm"
        if self.mode == "llm" and "generate" not in judge.kinds:
            raise TypeError(f"judge {judge.name!r} serves {sorted(judge.kinds)}; hallucination needs 'generate' or 'classify_pair'")
        self.scale = scale
        self.context = context
        self.get_context = get_context
        self.reason_mode = J.check_reason_mode(reason, self.mode == "llm")
        self.claim_judge = claim_judge if claim_judge is not None else (judge if self.mode == "llm" else None)
        self._reason_judge = reason_judge
        self.nli_threshold = nli_threshold
        self.per_claim = per_claim
        self.grounding = grounding

    @property
    def reason_judge(self):
        if self.reason_mode != "llm":
            return None
        if self._reason_judge is None:
            self._reason_judge = self.claim_judge if self.claim_judge is not None else J.default_llm()
        return self._reason_judge

    def _sentence_judge(self):
        from ..text.spacy_judge import default_spacy_judge

        return default_spacy_judge()

    def judges(self) -> list:
        found = [self.judge, self.claim_judge or self._sentence_judge(), self.reason_judge]
        return list({id(j): j for j in found if j is not None}.values())

    def options(self) -> dict:
        return {"scale": self.scale, "reason": self.reason_mode, "mode": self.mode,
                "nli_threshold": self.nli_threshold if self.mode == "nli" else None,
                "per_claim": self.per_claim if self.mode == "llm" else None, "grounding": self.grounding,
                "static_context": J.as_context_list(self.context), "get_context": self.get_context is not None}

    def steps(self, item: ScoreItem):
        output = item.output_text
        used, dropped = {}, []
        # 1. preprocess: claims
        preprocess_prompt = None
        if not output.strip():
            claims: list[str] = []
        elif self.claim_judge is not None:
            preprocess_prompt = P.claims_prompt(output)
            (answer,) = yield Ask(self.claim_judge, (J.generate(preprocess_prompt, CLAIMS_SCHEMA),))
            claims = J.unique(J.check_object(answer, "preprocess (claims)", "claims"))
            claims, dropped = J.grounded(claims, output, self.grounding)
            used["preprocess"] = self.claim_judge.name
        else:
            sentence_judge = self._sentence_judge()
            (parsed,) = yield Ask(sentence_judge, (ParseRequest(output),))
            claims = J.unique(unwrap(parsed, "preprocess (sentences)").sentences)
            used["preprocess"] = sentence_judge.name

        # 2. analyze: one verdict per claim
        context = J.resolve_context(item, self.context, self.get_context, step="analyze")
        analyze_prompt = None
        if not claims:
            verdicts: list[dict] = []
        elif not context:
            verdicts = [{"statement": c, "verdict": "yes", "reason": "No context was given to support this claim."}
                        for c in claims]
        elif self.mode == "nli":
            premise = "\n".join(context)
            analyze_prompt = _nli_prompt(premise, claims)
            answers = yield Ask(self.judge, tuple(PairRequest(premise, c) for c in claims))
            verdicts = [self._nli_verdict(c, a) for c, a in zip(claims, answers)]
            used["analyze"] = self.judge.name
        elif self.per_claim:
            prompts = [P.verdict_prompt(context, c) for c in claims]
            analyze_prompt = J.join_prompts(prompts)
            answers = yield Ask(self.judge, tuple(J.generate(p, VERDICT_SCHEMA) for p in prompts))
            verdicts = []
            for i, (claim, answer) in enumerate(zip(claims, answers), 1):
                v = J.check_single(answer, f"analyze (claim {i})", "verdict", ("yes", "no"))
                verdicts.append({"statement": claim, "verdict": J.norm(v["verdict"]), "reason": v.get("reason", "")})
            used["analyze"] = self.judge.name
        else:
            analyze_prompt = P.verdicts_prompt(context, claims)
            (answer,) = yield Ask(self.judge, (J.generate(analyze_prompt, verdicts_schema(len(claims))),))
            entries = J.check_object(answer, "analyze", "verdicts", count=len(claims), item_key="verdict",
                                     allowed=("yes", "no"))
            verdicts = [{"statement": c, "verdict": J.norm(e["verdict"]), "reason": e.get("reason", "")}
                        for c, e in zip(claims, entries)]
            used["analyze"] = self.judge.name
        score = hallucination_score(verdicts, self.scale)

        # 3. generateReason
        reason, reason_prompt = None, None
        if self.reason_mode == "template":
            reason = template_reason(score, verdicts, context)
        elif self.reason_mode == "llm":
            reason_prompt = P.reason_prompt(score, self.scale, context, verdicts)
            (answer,) = yield Ask(self.reason_judge, (J.generate(reason_prompt, REASON_SCHEMA),))
            reason = J.check_reason(answer)
            used["generateReason"] = self.reason_judge.name

        return self.result(
            item, score, reason=reason,
            preprocess_step_result={"claims": claims}, preprocess_prompt=preprocess_prompt,
            analyze_step_result={"verdicts": verdicts}, analyze_prompt=analyze_prompt,
            generate_reason_prompt=reason_prompt, judge=self.judge.name,
            extra={"judges": used, "context": context, **({"droppedClaims": dropped} if dropped else {})},
        )

    def _nli_verdict(self, claim: str, answer: Any) -> dict:
        probs = unwrap(answer, "analyze (NLI)")
        try:
            p = float(probs["entailment"])
        except (TypeError, KeyError, ValueError):
            raise NotScorable("analyze (NLI): expected an 'entailment' probability", raw=J.raw_of(probs)) from None
        supported = p >= self.nli_threshold
        relation = ">=" if supported else "<"
        return {"statement": claim, "verdict": "no" if supported else "yes",
                "reason": f"p(entailment by the context) = {p:.3f} {relation} {self.nli_threshold}",
                "entailment": round(p, 6)}


def _nli_prompt(premise: str, claims: list[str]) -> str:
    """What the NLI judge is given, recorded as text: one premise, each claim as a hypothesis."""
    hypotheses = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))
    return f"NLI premise:\n{premise}\n\nNLI hypotheses (one pair each):\n{hypotheses}"


def default_hallucination_judge():
    """The shipped NLI judge when its model is present, else the default LLM judge."""
    from ..judges import defaults

    try:
        return defaults.default_nli_judge()
    except (FileNotFoundError, OSError):
        return defaults.default_llm_judge()


def create_hallucination_scorer(model=None, scale: float = 1, context: Any = None, get_context: Callable | None = None,
                                reason: str | None = None, *, claim_model=None, reason_model=None,
                                nli_threshold: float = DEFAULT_NLI_THRESHOLD, per_claim: bool = True,
                                grounding: float = J.DEFAULT_GROUNDING, options: dict | None = None) -> HallucinationScorer:
    """A hallucination scorer.

    model: a Judge, a NAME|PATH, or None (the shipped NLI judge, else the default LLM). An NLI
    judge (kind "classify_pair") scores spaCy sentences (or the claims of `claim_model`) by
    entailment; an LLM judge extracts claims and gives verdicts. `options` (reference style)
    merges over the keyword defaults.
    """
    opts = {"scale": scale, "context": context, "get_context": get_context, "reason": reason,
            "nli_threshold": nli_threshold, "per_claim": per_claim, "grounding": grounding}
    opts.update(J.snake_options(options))
    judge = J.resolve_model(model, ("classify_pair", "generate"), default_hallucination_judge)
    claim_judge = J.resolve_model(claim_model, "generate", J.default_llm) if claim_model is not None else None
    reason_judge = J.resolve_model(reason_model, "generate", J.default_llm) if reason_model is not None else None
    return HallucinationScorer(judge, claim_judge=claim_judge, reason_judge=reason_judge, **opts)


__all__ = ["create_hallucination_scorer", "HallucinationScorer", "hallucination_score", "extract_tool_results",
           "DEFAULT_NLI_THRESHOLD"]
