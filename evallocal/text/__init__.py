"""Linguistic processing (spaCy, unidecode) used by the deterministic scorers."""
