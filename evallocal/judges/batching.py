"""Length-sorted batching with order restoration and out-of-memory back-off.

`run_batched(items, sizes, forward, batcher)` sorts the items longest first (so an
out-of-memory error shows on the first batch, not after an hour), cuts them into batches,
calls `forward(batch) -> answers` on each, and returns the answers in the original order.

When `forward` runs out of GPU memory (`torch.cuda.OutOfMemoryError`, or any `RuntimeError`
whose message says "out of memory"), the batch is split in halves and each half retried; the
`AdaptiveBatchSize` remembers the smaller size for the batches that follow. A single item that
still does not fit becomes a `JudgeFailure`: no request is ever lost or answered twice.
Other exceptions propagate (they are bugs or bad models, not a question of size).
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from ..types import JudgeFailure

log = logging.getLogger("evallocal.judges.batching")

T = TypeVar("T")


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA (or other accelerator) out-of-memory errors."""
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except Exception:  # torch missing or without CUDA support: fall back to the message
        pass
    return isinstance(exc, (RuntimeError, MemoryError)) and "out of memory" in str(exc).lower()


def free_memory() -> None:
    """Release what the failed batch held (tracebacks keep tensors alive until collected)."""
    try:
        import torch

        if torch.cuda.is_available():
            gc.collect()
            torch.cuda.empty_cache()
    except Exception:
        pass


@dataclass
class AdaptiveBatchSize:
    """The largest batch to try; halves on out-of-memory and stays halved.

    `max_items` caps the number of items per batch; `max_units` (optional) caps the sum of the
    items' sizes (e.g. padded tokens = batch rows x longest row), so long inputs get smaller
    batches than short ones.
    """

    max_items: int = 32
    max_units: int | None = None

    def __post_init__(self) -> None:
        if self.max_items < 1:
            raise ValueError(f"batch size must be at least 1, got {self.max_items}")

    def shrink(self, failed_size: int) -> None:
        new = max(1, failed_size // 2)
        if new < self.max_items:
            log.warning("out of memory with a batch of %d; batch size now %d", failed_size, new)
            self.max_items = new
            if self.max_units is not None:
                self.max_units = max(1, self.max_units // 2)


def length_sorted_batches(sizes: Sequence[int], batch: AdaptiveBatchSize) -> list[list[int]]:
    """Indices into `sizes`, longest first, cut into batches (padded-size aware)."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        rows = len(current) + 1
        # sorted longest first, so the batch's padded size is rows x its first (longest) item
        longest = sizes[current[0]] if current else sizes[index]
        too_many = rows > batch.max_items
        too_big = batch.max_units is not None and current and rows * max(longest, 1) > batch.max_units
        if current and (too_many or too_big):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def run_batched(
    items: Sequence[T],
    sizes: Sequence[int],
    forward: Callable[[list[T]], list[Any]],
    batch: AdaptiveBatchSize,
) -> list[Any]:
    """Answer every item through `forward`, in length-sorted batches; answers in input order."""
    if len(items) != len(sizes):
        raise ValueError("items and sizes differ in length")
    answers: list[Any] = [None] * len(items)
    done = [False] * len(items)
    for indices in length_sorted_batches(sizes, batch):
        # a batch may be cut further below the planned size after an earlier out-of-memory
        pending = [indices[i:i + batch.max_items] for i in range(0, len(indices), batch.max_items)]
        while pending:
            chunk = pending.pop(0)
            try:
                results = forward([items[i] for i in chunk])
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                free_memory()
                if len(chunk) == 1:
                    log.warning("out of memory on a single request; marked as failed")
                    answers[chunk[0]] = JudgeFailure(
                        "out of memory even with a batch of one request: use a shorter input, "
                        "a smaller model or a device with more memory"
                    )
                    done[chunk[0]] = True
                    continue
                batch.shrink(len(chunk))
                half = max(1, min(batch.max_items, len(chunk) // 2))
                pending[:0] = [chunk[i:i + half] for i in range(0, len(chunk), half)]
                continue
            if len(results) != len(chunk):
                raise RuntimeError(f"batch forward returned {len(results)} answers for {len(chunk)} items")
            for i, result in zip(chunk, results):
                answers[i] = result
                done[i] = True
    if not all(done):  # defensive: the loop above answers every index exactly once
        raise RuntimeError("internal error: some requests were not answered")
    return answers


__all__ = ["AdaptiveBatchSize", "free_memory", "is_out_of_memory", "length_sorted_batches", "run_batched"]
