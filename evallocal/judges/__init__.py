"""Judge backends: list of requests in, list of answers out, same order."""

from .base import Judge, JudgeKindError

__all__ = ["Judge", "JudgeKindError"]
