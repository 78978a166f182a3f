"""Prompts of the hallucination scorer (claims -> verdicts against a context -> reason)."""

from __future__ import annotations

import json


def claims_prompt(output: str) -> str:
    return f"""Break the TEXT below into short, self-contained factual claims.

How to do it:
- One claim per fact. Split a sentence that joins several facts with "and", "but" or commas.
- Keep every fact, even uncertain ones ("may", "could", "is expected to"), and keep numbers,
  dates, names and predictions exactly as written.
- Rewrite pronouns so each claim makes sense on its own.
- Skip questions, instructions, greetings and pure filler.
- If the text states no facts at all, give an empty list.

TEXT: {output}"""


_JUDGING_RULES = """- Hedged wording ("may", "possibly") about something the context does state: "no".
- Hedged wording about something the context does not mention: "yes".
- Rounder numbers, less precise dates or left-out details are fine: "no".
- Praise or judgements ("leading", "groundbreaking", "historic") need the context to say so, else "yes"."""


def verdict_prompt(context: list[str], claim: str) -> str:
    """One claim judged against the context (used when verdicts are asked one per claim)."""
    return f"""Decide whether a CLAIM is backed by the CONTEXT. Use only the context, never your own knowledge.

Answer "yes" (hallucinated) when the claim contradicts the context, or when the context does not
say it. Answer "no" (supported) when the context states it or it follows directly from it.
{_JUDGING_RULES}

CONTEXT:
{_context_block(context)}

CLAIM: {claim}

Give a short reason, then the verdict."""


def verdicts_prompt(context: list[str], claims: list[str]) -> str:
    """All claims of one output judged at once (one verdict per claim, in order)."""
    numbered = "\n".join(f"{i}. {claim}" for i, claim in enumerate(claims, 1))
    return f"""Decide for each numbered CLAIM whether it is backed by the CONTEXT. Use only the context, never your own knowledge.

verdict "yes" (hallucinated): the claim contradicts the context, or the context does not say it.
verdict "no" (supported): the context states it or it follows directly from it.
{_JUDGING_RULES}

CONTEXT:
{_context_block(context)}

CLAIMS:
{numbered}

Give exactly {len(claims)} verdicts, one per claim, in the same order."""


def reason_prompt(score: float, scale: float, context: list[str], verdicts: list[dict]) -> str:
    return f"""A hallucination check scored an answer {score} on a scale from 0 (every claim backed by the
context) to {scale} (no claim backed). Explain the score in one or two sentences, naming the
claims that were not backed by the context, if any.

CONTEXT:
{_context_block(context)}

VERDICTS ("yes" = not backed by the context):
{json.dumps(verdicts, ensure_ascii=False, indent=1)}

Start with "The score is {score} because"."""


def _context_block(context: list[str]) -> str:
    return "\n".join(f"- {part}" for part in context) if context else "(no context given)"
