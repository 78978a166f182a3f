"""Length-sorted batching, order restoration and out-of-memory back-off (no model needed)."""

import random

import pytest
import torch

from evallocal.judges.batching import AdaptiveBatchSize, is_out_of_memory, length_sorted_batches, run_batched
from evallocal.types import JudgeFailure


def test_answers_come_back_in_request_order():
    rng = random.Random(3)
    items = [rng.randint(1, 500) for _ in range(103)]
    calls = []

    def forward(batch):
        calls.append(list(batch))
        return [f"answer-{x}" for x in batch]

    answers = run_batched(items, items, forward, AdaptiveBatchSize(8))
    assert answers == [f"answer-{x}" for x in items]
    assert sum(len(c) for c in calls) == len(items)
    assert max(len(c) for c in calls) <= 8


def test_batches_are_length_sorted_longest_first():
    sizes = [5, 100, 7, 99, 6, 98, 1, 50]
    batches = length_sorted_batches(sizes, AdaptiveBatchSize(2))
    flat = [sizes[i] for b in batches for i in b]
    assert flat == sorted(sizes, reverse=True)  # the longest batch runs first: OOM shows at once
    # similar lengths share a batch (little padding)
    assert [sorted(sizes[i] for i in b) for b in batches] == [[99, 100], [50, 98], [6, 7], [1, 5]]


def test_token_budget_gives_long_items_smaller_batches():
    sizes = [1000] * 4 + [10] * 40
    batches = length_sorted_batches(sizes, AdaptiveBatchSize(max_items=32, max_units=2000))
    assert [len(b) for b in batches[:2]] == [2, 2]  # 2 x 1000 tokens fill the budget
    assert all(rows * max(sizes[i] for i in b) <= 2000 for b in batches for rows in [len(b)])
    assert sorted(i for b in batches for i in b) == list(range(len(sizes)))


@pytest.mark.parametrize("error", [
    lambda: torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    lambda: RuntimeError("CUDA error: out of memory"),
])
def test_out_of_memory_halves_the_batch_and_loses_nothing(error):
    items = list(range(37))
    seen_sizes = []

    def forward(batch):
        seen_sizes.append(len(batch))
        if len(batch) > 3:
            raise error()
        return [x * 10 for x in batch]

    batch = AdaptiveBatchSize(16)
    answers = run_batched(items, [1] * len(items), forward, batch)
    assert answers == [x * 10 for x in items]
    assert batch.max_items <= 3  # the smaller size is remembered
    assert seen_sizes[0] == 16 and max(seen_sizes[seen_sizes.index(min(seen_sizes)):]) <= 3


def test_a_single_request_that_never_fits_becomes_a_judge_failure():
    def forward(batch):
        if "huge" in batch:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return [x.upper() for x in batch]

    items = ["a", "huge", "b", "c"]
    answers = run_batched(items, [1, 9, 1, 1], forward, AdaptiveBatchSize(4))
    assert answers[0] == "A" and answers[2:] == ["B", "C"]
    assert isinstance(answers[1], JudgeFailure) and "out of memory" in answers[1].error


def test_other_errors_propagate():
    def forward(batch):
        raise ValueError("a bug, not a question of size")

    with pytest.raises(ValueError):
        run_batched([1, 2], [1, 1], forward, AdaptiveBatchSize(2))


def test_is_out_of_memory():
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("x"))
    assert is_out_of_memory(RuntimeError("[enforce fail] DefaultCPUAllocator: out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    assert not is_out_of_memory(ValueError("out of memory"))
