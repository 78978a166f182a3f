"""TagAttributes gives the POS and verb lemmas that spaCy's attribute_ruler + lemmatizer give."""

import importlib

from evallocal.text.spacy_judge import EXCLUDED_COMPONENTS, load_pipeline, pipeline_package

TEXTS = [
    "I'm gonna need you to bring the reports, ain't that right?",
    "She has been running since the doors were opened at 9 a.m.",
    "Go and imagine what they'd do if the markets crashed; they didn't know.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Don't worry, we've guessed the addresses and it's done.",
]


def test_same_pos_and_verb_lemmas_as_the_full_components():
    package = pipeline_package()
    full = importlib.import_module(package).load(exclude=list(EXCLUDED_COMPONENTS))
    nlp, attributes = load_pipeline(package)
    assert "attribute_ruler" not in nlp.pipe_names and "lemmatizer" not in nlp.pipe_names
    for text in TEXTS:
        expected = [(t.pos_, t.lemma_ if t.pos_ in ("VERB", "AUX") else t.text) for t in full(text)]
        assert attributes.annotate(nlp(text)) == expected, text
