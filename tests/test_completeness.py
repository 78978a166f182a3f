"""Completeness scorer: the reference values of SPEC.md and the edge cases."""

import pytest

from evallocal import create_completeness_scorer
from evallocal.text.elements import is_covered, normalize_words


@pytest.fixture(scope="module")
def scorer():
    return create_completeness_scorer()


@pytest.mark.parametrize(
    "input, output, expected",
    [
        ("The quick brown fox jumps over the lazy dog", "The quick brown fox jumps over the lazy dog", 1.0),
        ("The quick brown fox jumps over the lazy dog", "The fox jumps over the dog", 0.625),
        ("apples, oranges, and bananas", "apples and bananas", 0.75),
        ("", "", 1.0),
        ("", "some text", 0.0),
        ("What are the primary colors?", "The primary colors are red, blue, and yellow.", 0.8),
    ],
)
def test_reference_values(scorer, input, output, expected):
    result = scorer.run(input=input, output=output)
    assert result.error is None
    assert result.score == pytest.approx(expected)


def test_result_fields(scorer):
    result = scorer.run(input="The quick brown fox jumps over the lazy dog", output="The fox jumps over the dog")
    step = result.preprocess_step_result
    assert step["missingElements"] == ["quick", "brown", "lazy"]
    assert step["elementCounts"] == {"input": 8, "output": 5}
    assert step["inputElements"][:4] == ["the", "quick", "brown", "fox"]  # nouns come first
    assert "jump" in step["inputElements"]  # verbs in base form
    assert result.scorer_id == "completeness-scorer"
    as_dict = result.to_dict()
    assert as_dict["preprocessStepResult"] is step and as_dict["runId"] == result.run_id


def test_score_is_not_rounded(scorer):
    result = scorer.run(input="red green blue", output="red")
    assert result.score == pytest.approx(1 / 3)
    assert result.score != 0.33


@pytest.mark.parametrize("input, output", [("   ", "\n\t "), ("", "   ")])
def test_whitespace_only_counts_as_empty(scorer, input, output):
    assert scorer.run(input=input, output=output).score == 1.0


def test_whitespace_input_with_real_output_is_zero(scorer):
    assert scorer.run(input="  ", output="a real answer").score == 0.0


def test_empty_output_covers_nothing(scorer):
    assert scorer.run(input="Name three fruits", output="").score == 0.0


@pytest.mark.parametrize("field", ["input", "output"])
def test_none_is_a_clear_error_not_zero(scorer, field):
    kwargs = {"input": "question", "output": "answer", field: None}
    result = scorer.run(**kwargs)
    assert result.score is None
    assert f"{field} is None" in result.error


def test_non_english_and_mixed_script_do_not_crash(scorer):
    result = scorer.run(input="Wie heißt die Hauptstadt von Österreich? 北京 Москва", output="Wien. Beijing.")
    assert result.error is None
    elements = result.preprocess_step_result["inputElements"]
    assert all(e.isascii() for e in elements)  # unidecode transliterates every script
    assert "osterreich" in elements and "moskva" in elements and "bei" in elements


def test_normalisation_splits_camel_case_and_strips_diacritics():
    assert normalize_words("naïveCafé-Latte") == ["naive", "cafe", "latte"]
    assert normalize_words("getUserName") == ["get", "user", "name"]
    assert normalize_words("ÉCOLE") == ["ecole"]


def test_camel_case_in_text_is_split(scorer):
    result = scorer.run(input="Call getUserName first", output="first call the get user name function")
    assert {"get", "user", "name"} <= set(result.preprocess_step_result["inputElements"])
    assert result.score == 1.0


def test_coverage_rule():
    assert is_covered("cat", ["cat"]) and not is_covered("cat", ["cats"])  # <= 3 chars: exact
    assert is_covered("jumps", ["jump"])  # 4/5 = 0.8 > 0.6
    assert is_covered("jump", ["jumps"])
    assert not is_covered("bananas", ["ban"])  # 3/7 < 0.6
    assert not is_covered("apple", ["apricot"])


def test_duplicates_keep_first_occurrence(scorer):
    elements = scorer.run(input="dog cat dog bird cat", output="x").preprocess_step_result["inputElements"]
    assert len(elements) == len(set(elements))
    assert elements.index("dog") < elements.index("cat") < elements.index("bird")


def test_message_structures_are_accepted(scorer):
    result = scorer.run(
        input=[{"role": "user", "content": "apples, oranges, and bananas"}],
        output=[{"role": "user", "content": "ignored"},
                {"role": "assistant", "content": [{"type": "text", "text": "apples and bananas"}]}],
    )
    assert result.score == pytest.approx(0.75)
