import pytest

from evallocal.scoring import round_score


@pytest.mark.parametrize("value, expected", [
    (0.125, 0.13), (0.335, 0.34), (0.005, 0.01), (1 / 3, 0.33), (2 / 3, 0.67), (0.0, 0.0), (1.0, 1.0),
    (0.43, 0.43), (4.285714285714286, 4.29),
])
def test_rounds_halves_up_like_javascript(value, expected):
    assert round_score(value) == expected


def test_differs_from_python_bankers_rounding():
    assert round(0.125, 2) == 0.12 and round_score(0.125) == 0.13
