"""Key elements of a text for the completeness scorer (SPEC.md, "Completeness").

Elements, in this order: nouns (noun phrases), verbs in base form, topics (proper-noun runs) and
terms (every word). Like the reference, which turns verbs into
their infinitive in place before listing terms, verbs appear among the terms as lemmas.

Each element string is normalised: unidecode (diacritics stripped; other scripts transliterated
to ASCII, e.g. "Zürich" -> "Zurich", "北京" -> "Bei Jing"), camelCase split, lower-cased,
non-alphanumerics become spaces, then split into words. Duplicates keep their first occurrence.
"""

from __future__ import annotations

import re

from unidecode import unidecode

from ..types import ParsedText

VERB_TAGS = frozenset({"VERB", "AUX"})
_CAMEL_BOUNDARY = re.compile(r"([a-z])([A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalize_words(text: str) -> list[str]:
    """ "naïveCafé-Latte" -> ["naive", "cafe", "latte"]."""
    ascii_text = _CAMEL_BOUNDARY.sub(r"\1 \2", unidecode(text))
    return _NON_ALNUM.sub(" ", ascii_text.lower()).split()


def key_elements(parsed: ParsedText) -> list[str]:
    verbs = [t.lemma for t in parsed.tokens if t.pos in VERB_TAGS]
    terms = [t.lemma if t.pos in VERB_TAGS else t.text for t in parsed.tokens]
    raw = [*parsed.noun_phrases, *verbs, *parsed.topics, *terms]
    return list(dict.fromkeys(word for element in raw for word in normalize_words(element)))


def is_covered(element: str, output_elements: list[str]) -> bool:
    """Short elements (<= 3 chars) need an exact match; longer ones a > 60% containment."""
    if len(element) <= 3:
        return element in output_elements
    for other in output_elements:
        longer, shorter = (element, other) if len(element) > len(other) else (other, element)
        if shorter in longer and len(shorter) / len(longer) > 0.6:
            return True
    return False
