"""Score arithmetic shared by scorers."""

from __future__ import annotations

import math

_EPSILON = 2.220446049250313e-16  # JavaScript Number.EPSILON


def round_score(value: float) -> float:
    """Round to two decimals like the reference: Math.round((x + EPSILON) * 100) / 100.

    JavaScript's Math.round rounds halves up (0.125 -> 0.13), unlike Python's round().
    """
    return math.floor((value + _EPSILON) * 100 + 0.5) / 100
