"""Live scoring: score a function's calls in the background while it serves.

    @score_calls([create_answer_relevancy_scorer()], sample_rate=0.1, sink="scores.jsonl", seed=7)
    def answer(question: str) -> str: ...

Every call runs exactly as before: the wrapper returns the function's own value (or raises its
own exception, unscored), and the only work added to the caller's thread is a sampling draw and
a non-blocking queue put. A background thread collects sampled calls into batches (`batch_size`
calls, or whatever arrived within `flush_interval` seconds) and scores each batch with the
runner, so judge requests are batched across calls. Scoring failures are logged and written to
the sink as records with an "error" field — never raised into the application. Pending calls are
scored on `.flush()`, `.close()` and at interpreter exit (atexit).

Sampling is deterministic: a `random.Random(seed)` draw per call, in call order.

Records (one per sampled call and scorer) are dicts::

    {"call": n, "scorer": "bias-scorer", "time": 1700000000.0, "input": ..., "output": ...,
     "result": ScoreResult.to_dict()}        # or "error": "..." instead of "result"

`sink` is a callable(record), a path (JSON Lines, appended), or None (kept in `.records`).
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import logging
import queue
import random
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any, Callable, Sequence

from .runner import run_scorers
from .scorers.base import ScoreItem

log = logging.getLogger("evallocal.live")

_INPUT_KEYS = ("input", "prompt", "messages", "question", "query")


def default_input(args: tuple, kwargs: dict) -> Any:
    """The call's input: its single argument, else a keyword named like an input, else the first
    positional string or message list, else a JSON rendering of all arguments."""
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and len(kwargs) == 1:
        return next(iter(kwargs.values()))
    for key in _INPUT_KEYS:
        if key in kwargs:
            return kwargs[key]
    for arg in args:
        if isinstance(arg, (str, list, tuple)):
            return arg
    return json.dumps({"args": list(args), "kwargs": kwargs}, default=str, ensure_ascii=False)


def default_output(value: Any) -> Any:
    if value is None or isinstance(value, (str, list, tuple, dict)):
        return "" if value is None else value
    return str(value)


class LiveScorer:
    """A background worker that scores calls in batches. `wrap(fn)` returns the scored function;
    several functions may share one worker."""

    def __init__(self, scorers: Sequence, *, sample_rate: float = 1.0, sink: Callable | str | Path | None = None,
                 batch_size: int = 16, flush_interval: float = 2.0, seed: int | None = 0,
                 input_from: Callable[[tuple, dict], Any] = default_input,
                 output_from: Callable[[Any], Any] = default_output,
                 request_context_from: Callable[[tuple, dict, Any], Any] | None = None,
                 max_queue: int = 10_000, keep_records: int = 10_000):
        if not scorers:
            raise ValueError("score_calls needs at least one scorer")
        if not 0 <= sample_rate <= 1:
            raise ValueError(f"sample_rate must be in [0, 1], got {sample_rate}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.scorers = list(scorers)
        self.sample_rate = sample_rate
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.input_from = input_from
        self.output_from = output_from
        self.request_context_from = request_context_from
        self._sink = sink
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue(maxsize=max_queue)
        self._done = threading.Condition()
        self._pending = 0
        self._flush_now = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._calls = 0
        self.records: deque = deque(maxlen=keep_records)
        self.stats = {"calls": 0, "sampled": 0, "scored": 0, "not_scorable": 0, "errors": 0, "dropped": 0}
        ref = weakref.ref(self)
        atexit.register(lambda: (lambda live: live and live.close(timeout=60))(ref()))

    # --- the caller's side: cheap, never raises ----------------------------------------------

    def wrap(self, fn: Callable) -> Callable:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                value = await fn(*args, **kwargs)
                self._observe(args, kwargs, value)
                return value

            wrapper = async_wrapper
        else:
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                value = fn(*args, **kwargs)
                self._observe(args, kwargs, value)
                return value

        wrapper.live = self
        wrapper.flush = self.flush
        wrapper.close = self.close
        wrapper.stats = self.stats
        return wrapper

    def _observe(self, args: tuple, kwargs: dict, value: Any) -> None:
        try:
            with self._lock:
                self._calls += 1
                call = self._calls
                self.stats["calls"] += 1
                take = self._rng.random() < self.sample_rate
                if not take or self._closed:
                    return
                self.stats["sampled"] += 1
            entry = (call, args, kwargs, value)
            with self._done:
                self._pending += 1
            try:
                self._queue.put_nowait(entry)
            except queue.Full:
                with self._done:
                    self._pending -= 1
                    self._done.notify_all()
                with self._lock:
                    self.stats["dropped"] += 1
                log.warning("live scoring queue is full: call %d dropped unscored", call)
                return
            self._ensure_thread()
        except Exception:  # the application must never notice scoring
            log.exception("live scoring could not take a call")

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            with self._lock:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._work, name="evallocal-live", daemon=True)
                    self._thread.start()

    # --- control ------------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Score every call taken so far; True when all are done within `timeout` seconds."""
        self._flush_now.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._done:
            while self._pending:
                if self._thread is None or not self._thread.is_alive():
                    self._ensure_thread()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._done.wait(0.1 if left is None else min(left, 0.1))
                self._flush_now.set()
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Flush, then stop the worker; later calls still run but are no longer scored."""
        if self._closed:
            return True
        done = self.flush(timeout)
        with self._lock:
            self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return done

    # --- the worker -----------------------------------------------------------------------------

    def _work(self) -> None:
        batch: list = []
        started = 0.0
        while True:
            try:
                entry = self._queue.get(timeout=0.05)
                if not batch:
                    started = time.monotonic()
                batch.append(entry)
            except queue.Empty:
                if self._stop.is_set() and not batch:
                    return
            if batch and (len(batch) >= self.batch_size or self._flush_now.is_set() or self._stop.is_set()
                          or time.monotonic() - started >= self.flush_interval):
                if len(batch) < self.batch_size and self._queue.qsize() and not self._stop.is_set():
                    continue  # more calls are already waiting: fill the batch first
                self._score(batch)
                batch = []
                with self._done:
                    if not self._pending:
                        self._flush_now.clear()

    def _score(self, batch: list) -> None:
        now = time.time()
        records = []
        try:
            items = []
            for call, args, kwargs, value in batch:
                context = self.request_context_from(args, kwargs, value) if self.request_context_from else None
                items.append(ScoreItem(input=self.input_from(args, kwargs), output=self.output_from(value),
                                       request_context=context))
            results = run_scorers(items, self.scorers)
            for (call, *_), item, row in zip(batch, items, results):
                for scorer, result in zip(self.scorers, row):
                    records.append({"call": call, "scorer": scorer.id, "time": now, "input": item.input,
                                    "output": item.output, "result": result.to_dict()})
                    with self._lock:
                        self.stats["scored" if result.scorable else "not_scorable"] += 1
        except Exception as exc:  # recorded, never raised into the application
            log.exception("live scoring failed for %d calls", len(batch))
            with self._lock:
                self.stats["errors"] += len(batch)
            records = [{"call": call, "scorer": None, "time": now, "error": f"{type(exc).__name__}: {exc}"}
                       for call, *_ in batch]
        for record in records:
            self._emit(record)
        with self._done:
            self._pending -= len(batch)
            self._done.notify_all()

    def _emit(self, record: dict) -> None:
        try:
            if self._sink is None:
                self.records.append(record)
            elif callable(self._sink):
                self._sink(record)
            else:
                line = json.dumps(record, default=str, ensure_ascii=False)
                with open(self._sink, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        except Exception:
            log.exception("live scoring sink failed")
            with self._lock:
                self.stats["errors"] += 1


def score_calls(scorers: Sequence, sample_rate: float = 1.0, sink: Callable | str | Path | None = None,
                batch_size: int = 16, flush_interval: float = 2.0, seed: int | None = 0, **options: Any):
    """Decorator: score the wrapped function's calls (input = its arguments, output = its return
    value) in a background thread. The wrapped function gains `.flush()`, `.close()`, `.stats`
    and `.live` (the LiveScorer). See the module docstring."""
    live = LiveScorer(scorers, sample_rate=sample_rate, sink=sink, batch_size=batch_size,
                      flush_interval=flush_interval, seed=seed, **options)
    return live.wrap


__all__ = ["score_calls", "LiveScorer", "default_input", "default_output"]
