"""Scorers: each decides what to ask its judges and turns the answers into a score."""

from .completeness import create_completeness_scorer

# CLI names -> factories.
SCORERS = {
    "completeness": create_completeness_scorer,
}
