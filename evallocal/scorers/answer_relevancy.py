"""Answer relevancy: how much of the output addresses the question (not whether it is true).

Steps (each one `Ask` per item; the runner batches all items and scorers per round):
1. preprocess: statements of the output — spaCy sentences (embedding mode) or an LLM judge's
   split (LLM mode). Empty output -> no statements.
2. analyze: one result per statement, "yes" | "unsure" | "no".
   - embedding mode (the embedded default): cosine(statement, question) >= `yes_threshold` ->
     "yes", >= `unsure_threshold` -> "unsure", else "no".
   - LLM mode: grammar-constrained JSON with the result as an enum and a bounded reason.
3. generateReason: "template" (deterministic, cites the irrelevant statements), "llm", "none".
   Default: "llm" with an LLM judge (as the reference), "template" in embedding mode.

Score = (yes + uncertainty_weight * unsure) / n * scale, rounded; 0 without results. Results
compare case-insensitively after trimming.
"""

from __future__ import annotations

from typing import Any

from ..errors import NotScorable
from ..runner import Ask, unwrap
from ..scoring import round_score
from ..types import EmbedRequest, ParseRequest
from . import _judged as J
from .base import ScoreItem, Scorer
from .prompts import answer_relevancy as P

MAX_STATEMENTS = 8
STATEMENT_CHARS = 200
RESULTS = ("yes", "unsure", "no")
# Embedding mode thresholds on cosine(statement sentence, question) with all-MiniLM-L6-v2,
# calibrated on the shared relevancy_haluquestqa sample (197 rows; scripts/bench_quality.py
# --sweep / --out). Below UNSURE -> "no", at or above YES -> "yes". A grid over
# unsure in {0.25..0.40} x yes in {0.45..0.65} peaks on a flat plateau around unsure 0.30-0.35,
# yes 0.60-0.65 (score AUC 0.73-0.75, balanced accuracy 0.72 at "score >= 0.3"); we take the
# round corner (0.3, 0.6) rather than the single best cell.
DEFAULT_YES_THRESHOLD = 0.6
DEFAULT_UNSURE_THRESHOLD = 0.3

STATEMENTS_SCHEMA = J.obj(statements=J.array(J.string(STATEMENT_CHARS), MAX_STATEMENTS))
RESULT_SCHEMA = J.obj(reason=J.string(100), result=J.enum(RESULTS))
REASON_SCHEMA = J.obj(reason=J.string(300))


def results_schema(n: int) -> dict:
    return J.obj(results=J.array(RESULT_SCHEMA, n, n))


def relevancy_score(results: list[dict], uncertainty_weight: float = 0.3, scale: float = 1) -> float:
    """(yes + uncertainty_weight * unsure) / n * scale, rounded; 0 when there are no results."""
    if not results:
        return 0
    verdicts = [J.norm(r["result"]) for r in results]
    value = (verdicts.count("yes") + uncertainty_weight * verdicts.count("unsure")) / len(verdicts)
    return round_score(value * scale)


def template_reason(score: float, statements: list[str], results: list[dict]) -> str:
    s = J.fmt_score(score)
    if not results:
        return f"The score is {s} because the output has no statements that could answer the question."
    n = len(results)
    by = {k: [st for st, r in zip(statements, results) if J.norm(r["result"]) == k] for k in RESULTS}
    if len(by["yes"]) == n:
        return f"The score is {s} because all {n} statements address the question."
    parts = [f"{len(by['yes'])} of {n} statements address the question"]
    if by["unsure"]:
        parts.append(f"{len(by['unsure'])} only partly: {J.quote_list(by['unsure'])}")
    if by["no"]:
        parts.append(f"{len(by['no'])} are irrelevant: {J.quote_list(by['no'])}")
    return f"The score is {s} because " + "; ".join(parts) + "."


class AnswerRelevancyScorer(Scorer):
    id = "answer-relevancy-scorer"
    name = "Answer Relevancy Scorer"
    description = "How much of the output addresses the question (relevance, not correctness)."

    def __init__(self, judge, *, uncertainty_weight: float = 0.3, scale: float = 1, reason: str | None = None,
                 reason_judge=None, yes_threshold: float = DEFAULT_YES_THRESHOLD,
                 unsure_threshold: float = DEFAULT_UNSURE_THRESHOLD, per_statement: bool = True,
                 grounding: float = J.DEFAULT_GROUNDING):
        self.judge = judge
        if "embed" in judge.kinds:
            self.mode = "embedding"
        elif "generate" in judge.kinds:
            self.mode = "llm"
        else:
            raise TypeError(f"judge {judge.name!r} serves {sorted(judge.kinds)}; answer relevancy needs 'embed' or 'generate'")
        if unsure_threshold > yes_threshold:
            raise ValueError("unsure_threshold must not exceed yes_threshold")
        self.uncertainty_weight = uncertainty_weight
        self.scale = scale
        self.reason_mode = J.check_reason_mode(reason, self.mode == "llm")
        self._reason_judge = reason_judge
        self.yes_threshold = yes_threshold
        self.unsure_threshold = unsure_threshold
        self.per_statement = per_statement
        self.grounding = grounding

    @property
    def reason_judge(self):
        if self.reason_mode != "llm":
            return None
        if self._reason_judge is None:
            self._reason_judge = self.judge if self.mode == "llm" else J.default_llm()
        return self._reason_judge

    def judges(self) -> list:
        from ..text.spacy_judge import default_spacy_judge

        found = [self.judge, default_spacy_judge() if self.mode == "embedding" else None, self.reason_judge]
        return list({id(j): j for j in found if j is not None}.values())

    def options(self) -> dict:
        out = {"uncertainty_weight": self.uncertainty_weight, "scale": self.scale, "reason": self.reason_mode,
               "mode": self.mode}
        if self.mode == "embedding":
            out.update(yes_threshold=self.yes_threshold, unsure_threshold=self.unsure_threshold)
        else:
            out.update(per_statement=self.per_statement, grounding=self.grounding)
        return out

    def steps(self, item: ScoreItem):
        question, output = item.input_text, item.output_text
        used, dropped = {}, []
        # 1. preprocess: statements
        preprocess_prompt = None
        if not output.strip():
            statements: list[str] = []
        elif self.mode == "embedding":
            from ..text.spacy_judge import default_spacy_judge

            sentence_judge = default_spacy_judge()
            (parsed,) = yield Ask(sentence_judge, (ParseRequest(output),))
            statements = J.unique(unwrap(parsed, "preprocess (sentences)").sentences)
            used["preprocess"] = sentence_judge.name
        else:
            preprocess_prompt = P.statements_prompt(output)
            (answer,) = yield Ask(self.judge, (J.generate(preprocess_prompt, STATEMENTS_SCHEMA),))
            statements = J.unique(J.check_object(answer, "preprocess (statements)", "statements"))
            statements, dropped = J.grounded(statements, output, self.grounding)
            used["preprocess"] = self.judge.name

        # 2. analyze: one result per statement
        analyze_prompt = None
        if not statements:
            results: list[dict] = []
        elif self.mode == "embedding":
            if not question.strip():
                results = [{"result": "no", "reason": "There is no question to relate the statement to."}
                           for _ in statements]
            else:
                analyze_prompt = _embedding_prompt(question, statements)
                vectors = yield Ask(self.judge, tuple(EmbedRequest(t) for t in [question, *statements]))
                q = _vector(vectors[0])
                results = [self._similarity_result(q, _vector(v)) for v in vectors[1:]]
                used["analyze"] = self.judge.name
        elif self.per_statement:
            prompts = [P.relevance_prompt(question, s) for s in statements]
            analyze_prompt = J.join_prompts(prompts)
            answers = yield Ask(self.judge, tuple(J.generate(p, RESULT_SCHEMA) for p in prompts))
            results = []
            for i, answer in enumerate(answers, 1):
                r = J.check_single(answer, f"analyze (statement {i})", "result", RESULTS)
                results.append({"result": J.norm(r["result"]), "reason": r.get("reason", "")})
            used["analyze"] = self.judge.name
        else:
            analyze_prompt = P.relevances_prompt(question, statements)
            (answer,) = yield Ask(self.judge, (J.generate(analyze_prompt, results_schema(len(statements))),))
            entries = J.check_object(answer, "analyze", "results", count=len(statements), item_key="result",
                                     allowed=RESULTS)
            results = [{"result": J.norm(e["result"]), "reason": e.get("reason", "")} for e in entries]
            used["analyze"] = self.judge.name
        score = relevancy_score(results, self.uncertainty_weight, self.scale)

        # 3. generateReason
        reason, reason_prompt = None, None
        if self.reason_mode == "template":
            reason = template_reason(score, statements, results)
        elif self.reason_mode == "llm":
            reason_prompt = P.reason_prompt(score, self.scale, question, results, statements)
            (answer,) = yield Ask(self.reason_judge, (J.generate(reason_prompt, REASON_SCHEMA),))
            reason = J.check_reason(answer)
            used["generateReason"] = self.reason_judge.name

        return self.result(
            item, score, reason=reason,
            preprocess_step_result={"statements": statements}, preprocess_prompt=preprocess_prompt,
            analyze_step_result={"results": results}, analyze_prompt=analyze_prompt,
            generate_reason_prompt=reason_prompt, judge=self.judge.name,
            extra={"judges": used, **({"droppedStatements": dropped} if dropped else {})},
        )

    def _similarity_result(self, q: list[float], v: list[float]) -> dict:
        sim = sum(a * b for a, b in zip(q, v))
        if sim >= self.yes_threshold:
            result, rule = "yes", f">= {self.yes_threshold}"
        elif sim >= self.unsure_threshold:
            result, rule = "unsure", f"in [{self.unsure_threshold}, {self.yes_threshold})"
        else:
            result, rule = "no", f"< {self.unsure_threshold}"
        return {"result": result, "reason": f"cosine similarity to the question {sim:.3f} {rule}",
                "similarity": round(sim, 6)}


def _vector(answer: Any) -> list[float]:
    value = unwrap(answer, "analyze (embedding)")
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        raise NotScorable("analyze (embedding): expected a vector", raw=J.raw_of(value)) from None


def _embedding_prompt(question: str, statements: list[str]) -> str:
    listed = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    return f"embedded question:\n{question}\n\nembedded statements (cosine similarity to the question):\n{listed}"


def default_relevancy_judge():
    from ..judges.defaults import default_embedding_judge

    return default_embedding_judge()


def create_answer_relevancy_scorer(model=None, uncertainty_weight: float = 0.3, scale: float = 1,
                                   reason: str | None = None, *, reason_model=None,
                                   yes_threshold: float = DEFAULT_YES_THRESHOLD,
                                   unsure_threshold: float = DEFAULT_UNSURE_THRESHOLD,
                                   per_statement: bool = True, grounding: float = J.DEFAULT_GROUNDING,
                                   options: dict | None = None) -> AnswerRelevancyScorer:
    """An answer relevancy scorer.

    model: a Judge, a NAME|PATH, or None (embedding mode with the default embedding judge). An
    "embed" judge maps cosine similarity to yes/unsure/no; a "generate" judge (LLM) splits and
    judges statements. Options merge with the defaults: `scale=10` alone keeps the 0.3 weight.
    """
    opts = {"uncertainty_weight": uncertainty_weight, "scale": scale, "reason": reason,
            "yes_threshold": yes_threshold, "unsure_threshold": unsure_threshold, "per_statement": per_statement,
            "grounding": grounding}
    opts.update(J.snake_options(options))
    judge = J.resolve_model(model, ("embed", "generate"), default_relevancy_judge)
    reason_judge = J.resolve_model(reason_model, "generate", J.default_llm) if reason_model is not None else None
    return AnswerRelevancyScorer(judge, reason_judge=reason_judge, **opts)


__all__ = ["create_answer_relevancy_scorer", "AnswerRelevancyScorer", "relevancy_score"]
