"""Exceptions that carry enough context for a clear message."""

from __future__ import annotations


class NotScorable(Exception):
    """Raised inside a scorer step: this item cannot be scored. Never turned into a score of 0."""

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw


class InputError(ValueError):
    """Bad input data: the message names the item (or line) and how to fix it."""
