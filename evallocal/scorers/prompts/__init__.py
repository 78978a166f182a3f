"""Prompt texts for the model-judged scorers, kept apart from the score arithmetic.

Written for evallocal (no text taken from other evaluation projects). Each function returns the
exact user message sent to the judge; the scorer records it in the result. The answer format is
fixed by a JSON schema (grammar-constrained decoding), so prompts describe the task, not JSON
syntax rules.
"""
