"""The continuous-batching grammar decoder, on a tiny random Llama built here (float64, so
batching cannot flip a greedy choice through rounding): same answers as one request at a time and
as transformers' generate() with xgrammar's own logits processor; rows leave and join the running
batch; forced tokens and the stop token skip forward passes; out-of-memory back-off loses nothing."""

import pytest

from evallocal.types import GenerateRequest, JudgeFailure

from script_loader import load_script


def structured_requests(n, seed):
    return load_script("bench_judge").structured_requests(n, seed=seed)


def save_tiny_model(folder, config_class, model_class, **extra):
    """A 2-layer random model with SmolLM2's tokenizer (chat template included), saved locally."""
    import torch
    from transformers import AutoTokenizer

    from evallocal.judges.defaults import default_llm_judge
    from evallocal.judges.gguf import converted_folder

    smollm2 = default_llm_judge()
    tokenizer = AutoTokenizer.from_pretrained(converted_folder(smollm2.gguf_path, smollm2.gguf_sha256),
                                              local_files_only=True)
    config = config_class(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                          pad_token_id=tokenizer.pad_token_id, **extra)
    torch.manual_seed(0)
    model = model_class(config)
    with torch.no_grad():  # larger weights than the default init: sharp attention, position-sensitive
        for weight in model.parameters():
            if weight.ndim == 2:
                weight.normal_(0, 0.5)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_llm_dir(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    return save_tiny_model(tmp_path_factory.mktemp("tiny-llama"), LlamaConfig, LlamaForCausalLM)


def tiny_judge(folder, batch_size, jump_forward=True):
    from evallocal.judges.hf_llm import HFLLMJudge

    return HFLLMJudge(folder, name="tiny-llama", device="cpu", dtype="float64", max_batch_size=batch_size,
                      jump_forward=jump_forward).load()


def count_merges(judge):
    """Patch the judge's decoder to count prefilled groups stacked under a running batch."""
    merges = []
    merge = judge.decoder._merge

    def counting(cache, *args):
        merges.append(cache is not None)
        return merge(cache, *args)

    judge.decoder._merge = counting
    return merges


def as_comparable(answer):
    return ("failure", answer.error, answer.raw) if isinstance(answer, JudgeFailure) else answer


def test_continuous_batching_gives_the_answers_of_one_request_at_a_time(tiny_llm_dir):
    requests = structured_requests(14, seed=3)
    judge = tiny_judge(tiny_llm_dir, batch_size=4)
    merges = count_merges(judge)
    batched = judge.answer(requests)
    stats = judge.decoder.stats
    joined_running_batch = sum(merges)
    alone = [judge.answer([r])[0] for r in requests]
    assert [as_comparable(a) for a in batched] == [as_comparable(a) for a in alone]
    assert sum(not isinstance(a, JudgeFailure) for a in batched) >= 10
    # 14 rows through 4 seats: waiting rows joined the running batch several times
    assert joined_running_batch >= 2
    assert stats.forward_passes < stats.new_tokens


def test_without_jump_forward_the_tokens_are_those_of_generate_with_xgrammar(tiny_llm_dir):
    import torch
    import xgrammar as xgr
    from transformers import GenerationConfig

    from evallocal.judges.decoding import DecodeRow

    judge = tiny_judge(tiny_llm_dir, batch_size=8, jump_forward=False)
    requests = structured_requests(8, seed=5)
    rows = [judge._prepare(i, r) for i, r in enumerate(requests)]
    ours = judge.decoder.decode([DecodeRow(r.prompt_ids, r.budget, r.grammar) for r in rows])
    assert judge.decoder.stats.forced_tokens > 0
    for row, mine in zip(rows, ours):
        processor = xgr.contrib.hf.LogitsProcessor([row.grammar])
        config = GenerationConfig(do_sample=False, max_new_tokens=row.budget, eos_token_id=judge.stop_ids,
                                  pad_token_id=judge.pad_id)
        with torch.inference_mode():
            out = judge.model.generate(input_ids=torch.tensor([row.prompt_ids]), generation_config=config,
                                       logits_processor=[processor])
        theirs = [t for t in out[0, len(row.prompt_ids):].tolist() if t not in judge.stop_ids]
        assert mine.tokens == theirs


def test_out_of_memory_halves_the_seats_and_restarts_rows_without_losing_any(tiny_llm_dir):
    judge = tiny_judge(tiny_llm_dir, batch_size=8)
    requests = structured_requests(10, seed=9)
    expected = [as_comparable(a) for a in judge.answer(requests)]
    forward = judge.decoder._forward

    def small_memory(input_ids, *args):
        if input_ids.shape[0] > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(input_ids, *args)

    judge.decoder._forward = small_memory
    assert [as_comparable(a) for a in judge.answer(requests)] == expected
    assert judge.batch.max_items == 2
    assert judge.decoder.stats.restarts >= 1


def test_a_request_that_never_fits_fails_alone(tiny_llm_dir):
    judge = tiny_judge(tiny_llm_dir, batch_size=4)
    others = structured_requests(3, seed=1)
    expected = [as_comparable(a) for a in judge.answer(others)]
    long = GenerateRequest.build([("user", "Summarise: " + "word " * 400)], others[0].schema)
    forward = judge.decoder._forward

    def long_rows_do_not_fit(input_ids, mask, *args):
        if mask.shape[1] > 300:
            raise RuntimeError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return forward(input_ids, mask, *args)

    judge.decoder._forward = long_rows_do_not_fit
    answers = judge.answer([long] + others)
    assert isinstance(answers[0], JudgeFailure) and "out of memory even with a batch of one" in answers[0].error
    assert [as_comparable(a) for a in answers[1:]] == expected


def test_forced_tokens_and_the_final_stop_token_cost_no_forward_pass(tiny_llm_dir):
    judge = tiny_judge(tiny_llm_dir, batch_size=4)
    schema = {"type": "object", "properties": {"answer": {"const": "yes"}}, "required": ["answer"],
              "additionalProperties": False}
    request = GenerateRequest.build([("user", "Say yes.")], schema)
    assert judge.answer([request]) == [{"answer": "yes"}]
    stats = judge.decoder.stats
    assert stats.forced_tokens >= 1
    # one forward pass per token the model chose; forced tokens and the closing stop token are free
    assert stats.forward_passes == stats.new_tokens - stats.forced_tokens - 1


def test_jump_forward_feeds_a_forced_key_as_the_tokenizer_writes_it(tiny_llm_dir):
    schema = {"type": "object", "properties": {"a_rather_long_key_name": {"enum": ["yes", "no"]},
                                               "another_long_key": {"enum": ["low", "high"]}},
              "required": ["a_rather_long_key_name", "another_long_key"], "additionalProperties": False}
    requests = [GenerateRequest.build([("user", f"Question {i}?")], schema) for i in range(6)]
    plain, jumping = tiny_judge(tiny_llm_dir, 4, jump_forward=False), tiny_judge(tiny_llm_dir, 4)
    assert all(isinstance(a, dict) for a in plain.answer(requests))
    plain_passes = plain.decoder.stats.forward_passes
    answers = jumping.answer(requests)
    assert all(isinstance(a, dict) and set(a) == set(schema["properties"]) for a in answers)
    assert jumping.decoder.stats.forward_passes < plain_passes
    assert "jump_forward" in jumping.describe()["decoding"]  # part of the cache key and manifest

    from evallocal.judges.decoding import DecodeRow

    row = jumping._prepare(0, requests[0])
    tokens = jumping.decoder.decode([DecodeRow(row.prompt_ids, row.budget, row.grammar)])[0].tokens
    opening = jumping.tokenizer.encode('{"a_rather_long_key_name": "', add_special_tokens=False)
    assert tokens[:len(opening) - 1] == opening[:-1]


def test_a_sliding_window_model_is_batched_without_merging_caches(tmp_path):
    """Sliding-window caches cannot be stacked: rows join only when the batch has emptied. (The
    window counts cache columns, padding included, as in transformers' batched generate(); here it
    is longer than any row, as a 4k window is for evaluation prompts.)"""
    from transformers import MistralConfig, MistralForCausalLM

    from evallocal.judges.decoding import _mergeable

    folder = save_tiny_model(tmp_path, MistralConfig, MistralForCausalLM, sliding_window=1024)
    judge = tiny_judge(folder, batch_size=4)
    merges = count_merges(judge)
    requests = structured_requests(10, seed=4)
    batched = judge.answer(requests)
    alone = [judge.answer([r])[0] for r in requests]
    assert [as_comparable(a) for a in batched] == [as_comparable(a) for a in alone]
    assert len(merges) >= 3 and not any(merges)  # 3 groups of at most 4 rows, one after the other

    from transformers import DynamicCache

    assert not _mergeable(DynamicCache(config=judge.model.config))


def test_a_failing_bitmask_kernel_falls_back_to_plain_torch(tiny_llm_dir, monkeypatch, caplog):
    import xgrammar as xgr

    judge = tiny_judge(tiny_llm_dir, batch_size=4)
    requests = structured_requests(4, seed=2)
    expected = [as_comparable(a) for a in judge.answer(requests)]
    apply = xgr.apply_token_bitmask_inplace
    backends = []

    def no_gpu_compiler(logits, bitmask, **kwargs):
        backends.append(kwargs.get("backend"))
        if kwargs.get("backend") == "auto":
            raise RuntimeError("triton: cannot find a C compiler")
        return apply(logits, bitmask, **kwargs)

    monkeypatch.setattr(xgr, "apply_token_bitmask_inplace", no_gpu_compiler)
    judge.decoder._mask_backend = "auto"
    with caplog.at_level("WARNING", logger="evallocal.judges.decoding"):
        assert [as_comparable(a) for a in judge.answer(requests)] == expected
    assert backends.count("auto") == 1 and backends[-1] == "torch_native"
    assert "torch_native" in caplog.text


def test_a_shared_prompt_prefix_is_computed_once_and_changes_no_answer(tiny_llm_dir):
    judge = tiny_judge(tiny_llm_dir, batch_size=6)
    requests = structured_requests(12, seed=6)  # the system prompt and chat header are shared
    judge.decoder.min_shared_prefix = 1_000_000
    expected = [as_comparable(a) for a in judge.answer(requests)]
    assert judge.decoder.stats.shared_prefix_tokens == 0
    judge.decoder.min_shared_prefix = 4
    assert [as_comparable(a) for a in judge.answer(requests)] == expected
    assert judge.decoder.stats.shared_prefix_tokens >= 5 * 10  # 5 more rows than one, >= 10 tokens each


def test_shared_prefix_leaves_every_prompt_a_token_of_its_own():
    from evallocal.judges.decoding import _shared_prefix

    assert _shared_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 9]]) == 2
    assert _shared_prefix([[1, 2, 3], [1, 2, 3]]) == 2
    assert _shared_prefix([[7], [7, 8]]) == 0


def test_count_allowed_reads_xgrammar_bitmasks():
    import numpy as np

    from evallocal.judges.decoding import _count_allowed

    bits = np.zeros(4, dtype=np.uint32)
    assert _count_allowed(bits) == (0, -1)
    bits[2] = np.uint32(1 << 31)
    assert _count_allowed(bits) == (1, 95)
    bits[1] = np.uint32(0b1010)
    assert _count_allowed(bits) == (3, 33)


def test_concurrent_callers_get_their_own_answers(tiny_llm_dir):
    """Live scoring calls the shared judge from a background thread while the main thread scores."""
    import threading

    judge = tiny_judge(tiny_llm_dir, batch_size=4)
    groups = [structured_requests(5, seed=s) for s in (30, 31, 32)]
    expected = [[as_comparable(a) for a in judge.answer(g)] for g in groups]
    got = [None] * len(groups)

    def call(i):
        got[i] = [as_comparable(a) for a in judge.answer(groups[i])]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(groups))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_closing_padding_holes_changes_no_answer(tiny_llm_dir):
    judge = tiny_judge(tiny_llm_dir, batch_size=5)
    requests = structured_requests(12, seed=8)
    expected = [as_comparable(a) for a in judge.answer(requests)]
    assert judge.decoder.stats.compactions == 0  # the default thresholds: not on prompts this short
    judge.decoder.compact_ratio, judge.decoder.compact_min_width = 1.0, 0  # close holes at every step
    assert [as_comparable(a) for a in judge.answer(requests)] == expected
    assert judge.decoder.stats.compactions >= 5
