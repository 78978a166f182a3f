"""Prompts of the answer relevancy scorer (statements -> relevance per statement -> reason)."""

from __future__ import annotations

import json


def statements_prompt(output: str) -> str:
    return f"""List the statements made in the TEXT below, one list entry per sentence or idea.

- Do not over-split: a short answer, a single word or an error message is one statement.
- Keep the wording; drop only empty filler.
- An empty text has no statements.

TEXT: {output}"""


def relevance_prompt(question: str, statement: str) -> str:
    """One statement judged against the question (one request per statement)."""
    return f"""Does the STATEMENT help answer the QUESTION? Judge relevance only, not whether it is true.

"yes": it answers the question or gives information the question asks for.
"unsure": it is on the topic but only partly answers, stays vague, or answers the question with a
wrong fact (for example "Lyon is the capital of France" for "What is the capital of France?").
"no": it is about something else, or it is empty.

QUESTION: {question}

STATEMENT: {statement}

Give a short reason, then the result."""


def relevances_prompt(question: str, statements: list[str]) -> str:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    return f"""For each numbered STATEMENT, decide whether it helps answer the QUESTION. Judge relevance only, not truth.

"yes": it answers the question or gives information the question asks for.
"unsure": on the topic but only partly answers, stays vague, or answers with a wrong fact.
"no": about something else, or empty.

QUESTION: {question}

STATEMENTS:
{numbered}

Give exactly {len(statements)} results, one per statement, in the same order."""


def reason_prompt(score: float, scale: float, question: str, results: list[dict], statements: list[str]) -> str:
    rows = [{"statement": s, **r} for s, r in zip(statements, results)]
    return f"""An answer to a question was scored {score} for relevance on a scale from 0 (nothing relevant)
to {scale} (everything relevant). Explain the score in one or two sentences, naming the
statements that did not address the question, if any.

QUESTION: {question}

RESULTS per statement ("yes" relevant, "unsure" partly, "no" irrelevant):
{json.dumps(rows, ensure_ascii=False, indent=1)}

Start with "The score is {score} because"."""
