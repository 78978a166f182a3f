"""Continuous batched greedy decoding under per-row grammars (xgrammar), for `HFLLMJudge`.

transformers' `generate()` runs a batch until its longest row is done: a row whose JSON closed
early keeps its seat and costs a full step until the end. On SmolLM2 with evallocal's schemas
that wasted about 60% of the row-steps. This loop is the continuous batching of vLLM and TGI,
kept small:

* A row leaves the batch the moment its JSON closes or its token budget runs out. Waiting rows
  are prefilled and merged into the running KV cache once a quarter of the seats are free
  (longest first, like `run_batched`).
* A token the grammar forces (exactly one allowed token) is taken without asking the model and
  fed with the next forward pass; when the grammar allows only stop tokens the row ends without
  a forward pass. argmax could not have picked anything else, so this alone gives the answers
  of plain greedy constrained decoding (up to the low-order float effects of padding that any
  batching has).
* Jump-forward (on when a tokenizer is given): a string the grammar forces although several
  tokenizations of it are allowed (a key and its `": "`) is tokenized the way the tokenizer
  writes it and fed at once, except its last token, which the model still chooses so that it
  can merge with what follows. This changes which (equivalent) tokens spell the JSON, so
  answers can differ from plain greedy decoding; it is part of the judge's recorded identity.
* A prompt prefix shared by every row of a prefill (the system prompt and a template's
  instructions) is computed once and its cache copied to each row (measured: 64 bias verdicts
  of ~160 tokens, 16.1 s -> 13.9 s on SmolLM2 / CPU).
* Padding holes (rows fed fewer tokens than others in a step) are closed once the cache is 1.5x
  wider than its longest row, so memory follows the tokens actually held.
* Out of memory: the seats halve (`AdaptiveBatchSize`) and the rows in flight restart from their
  prompts; a row that does not fit alone fails with a message. No row is lost.

Merging caches needs plain full-attention layers (`DynamicLayer`); with other caches (sliding
windows, hybrids) waiting rows are seated only when the batch has emptied. A sliding window counts
cache columns, padding included (as in transformers' batched `generate()`), so a row longer than
the window sees a little less context when batched; evaluation prompts rarely reach 4k windows.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from .batching import AdaptiveBatchSize, free_memory, is_out_of_memory

log = logging.getLogger("evallocal.judges.decoding")


@dataclass
class DecodeRow:
    prompt_ids: list[int]
    budget: int  # most new tokens, the stop token included
    grammar: Any  # xgrammar.CompiledGrammar


@dataclass
class Decoded:
    tokens: list[int]  # the new tokens, without the stop token
    finished: bool  # the grammar reached its end within the budget
    error: str | None = None  # set when the row could not be decoded at all


@dataclass
class DecodeStats:
    """Work done since the last reset (`HFLLMJudge` resets it at every `answer()` call)."""

    forward_passes: int = 0
    prefills: int = 0
    new_tokens: int = 0
    forced_tokens: int = 0
    restarts: int = 0
    grammar_seconds: float = 0.0  # bitmask fill, masking and token acceptance (not the model)
    shared_prefix_tokens: int = 0  # prompt tokens not computed again thanks to a shared prefix
    compactions: int = 0  # times the cache's padding holes were closed


@dataclass
class _Seat:
    index: int
    row: DecodeRow
    matcher: Any
    allowed: Any = None  # the row's current token bitmask (numpy uint32), filled by the matcher
    tokens: list[int] = field(default_factory=list)
    feed: list[int] = field(default_factory=list)  # chosen tokens not yet in the KV cache
    position: int = 0  # position id of feed[0]
    result: Decoded | None = None


class GrammarDecoder:
    """Greedy decoding of many rows with one model; see the module docstring."""

    def __init__(self, model, *, stop_ids: Sequence[int], pad_id: int, vocab_size: int,
                 batch: AdaptiveBatchSize, device: str = "cpu", tokenizer=None):
        import torch
        import xgrammar as xgr

        self.model = model
        self.stop_ids = frozenset(stop_ids)
        self.pad_id = pad_id
        self.vocab_size = vocab_size
        self.batch = batch
        self.device = device
        self._torch = torch
        self._xgr = xgr
        self._bitmasks = xgr.allocate_token_bitmask(batch.max_items, vocab_size)
        self._filler = xgr.BatchGrammarMatcher()  # fills many bitmasks on parallel threads
        self._mask_backend = "auto"
        self.min_shared_prefix = 32  # shorter shared prefixes cost about what they save on a CPU
        self.compact_ratio = 1.5  # close padding holes once the cache is this much wider than its longest row
        self.compact_min_width = 256
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5.2x
        self.tokenizer = tokenizer  # set: jump-forward over forced strings
        self._jump_tokens: dict[str, list[int]] = {}
        self.stats = DecodeStats()

    # --- the loop ---------------------------------------------------------------------------

    def decode(self, rows: Sequence[DecodeRow]) -> list[Decoded]:
        """One `Decoded` per row, in the rows' order."""
        before = replace(self.stats)
        results: list[Decoded | None] = [None] * len(rows)
        sizes = [len(r.prompt_ids) + r.budget for r in rows]
        pending = deque(sorted(range(len(rows)), key=lambda i: (-sizes[i], i)))
        seats: list[_Seat] = []
        cache = mask = None
        while pending or seats:
            admitted = self._admit(pending, seats, sizes, cache)
            newcomers: list[_Seat] = []
            try:
                for seat in self._seat_rows([(index, rows[index]) for index in admitted]):
                    if seat.result is not None:  # ended on forced tokens alone
                        results[seat.index] = seat.result
                    else:
                        newcomers.append(seat)
                if newcomers:
                    logits, new_cache, new_mask = self._prefill(newcomers)
                    self._choose(newcomers, logits)
                    cache, mask = self._merge(cache, mask, new_cache, new_mask)
                    seats = seats + newcomers
                elif seats and not admitted:
                    logits, mask = self._step(seats, cache, mask)
                    self._choose(seats, logits)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                in_flight = seats + [s for s in newcomers if all(s is not t for t in seats)]
                seats, cache, mask = [], None, None
                self._restart(in_flight, pending, sizes, results)
                continue
            seats, cache, mask = self._evict(seats, cache, mask, results)
            if seats:
                mask = self._compact(cache, mask)
        log.debug("decoded %d rows: %d forward passes (%d prefills, %d prompt tokens shared), %d new tokens, "
                  "%d forced, %d restarts", len(rows), self.stats.forward_passes - before.forward_passes,
                  self.stats.prefills - before.prefills,
                  self.stats.shared_prefix_tokens - before.shared_prefix_tokens,
                  self.stats.new_tokens - before.new_tokens, self.stats.forced_tokens - before.forced_tokens,
                  self.stats.restarts - before.restarts)
        return results  # type: ignore[return-value]

    def _restart(self, in_flight: list[_Seat], pending: deque, sizes: list[int], results: list) -> None:
        """Out of memory: halve the seats and queue the rows in flight again from their prompts."""
        free_memory()
        self.stats.restarts += 1
        if len(in_flight) == 1:
            log.warning("out of memory on a single request; marked as failed")
            results[in_flight[0].index] = Decoded([], False, error=(
                "out of memory even with a batch of one request: use a shorter input, "
                "a smaller model or a device with more memory"))
            return
        self.batch.shrink(len(in_flight))
        pending.extendleft(sorted((s.index for s in in_flight), key=lambda i: (sizes[i], -i)))

    def _admit(self, pending: deque, seats: list[_Seat], sizes: list[int], cache) -> list[int]:
        """Indices to seat now: all free seats once a quarter are free (a prefill pass is dear)."""
        if not pending or (seats and not _mergeable(cache)):
            return []
        free = self.batch.max_items - len(seats)
        if seats and free < max(1, self.batch.max_items // 4):
            return []
        chosen: list[int] = []
        longest = max((sizes[s.index] for s in seats), default=0)
        while pending and len(chosen) < free:
            longest_after = max(longest, sizes[pending[0]])
            units = (len(seats) + len(chosen) + 1) * longest_after
            if self.batch.max_units is not None and (seats or chosen) and units > self.batch.max_units:
                break
            longest = longest_after
            chosen.append(pending.popleft())
        return chosen

    # --- grammar side -----------------------------------------------------------------------

    def _seat_rows(self, rows: list[tuple[int, DecodeRow]]) -> list[_Seat]:
        started = time.perf_counter()
        seats = [_Seat(index, row, self._xgr.GrammarMatcher(row.grammar), position=len(row.prompt_ids))
                 for index, row in rows]
        self._fill_and_force(seats)  # a schema's opening tokens may be forced already
        self.stats.grammar_seconds += time.perf_counter() - started
        return seats

    def _choose(self, seats: list[_Seat], logits) -> None:
        """Greedy pick under each seat's bitmask, then take the forced tokens that follow."""
        torch = self._torch
        started = time.perf_counter()
        scores = logits.float()
        masks = torch.from_numpy(np.stack([s.allowed for s in seats]).view(np.int32)).to(scores.device)
        self._mask(scores, masks)
        for seat, token in zip(seats, scores.argmax(dim=-1).tolist()):
            seat.position += len(seat.feed)
            seat.feed = []
            self._accept(seat, token)
        self._fill_and_force(seats)
        self.stats.grammar_seconds += time.perf_counter() - started

    def _mask(self, scores, masks) -> None:
        """Set disallowed logits to -inf (xgrammar's kernel for the device; its plain-torch one if
        that fails, e.g. a GPU kernel that cannot be compiled on the machine)."""
        try:
            self._xgr.apply_token_bitmask_inplace(scores, masks, backend=self._mask_backend)
        except Exception as exc:
            if self._mask_backend == "torch_native":
                raise
            log.warning("xgrammar's %s bitmask kernel failed (%s); using its torch_native kernel",
                        scores.device.type, exc)
            self._mask_backend = "torch_native"
            self._xgr.apply_token_bitmask_inplace(scores, masks, backend="torch_native")

    def _accept(self, seat: _Seat, token: int) -> None:
        if not seat.matcher.accept_token(token):
            raise RuntimeError(f"the grammar rejected token {token} that its own bitmask allowed")
        self.stats.new_tokens += 1
        if token in self.stop_ids:
            seat.result = Decoded(seat.tokens, finished=True)
            return
        seat.tokens.append(token)
        seat.feed.append(token)

    def _fill_and_force(self, seats: list[_Seat]) -> None:
        """Fill the live seats' bitmasks (in parallel, on xgrammar's threads), then take the
        tokens the grammar forces; seats that took some are filled again."""
        todo = [s for s in seats if s.result is None]
        while todo:
            for seat in todo:
                if len(seat.tokens) >= seat.row.budget:  # no room left, not even for the stop token
                    seat.result = Decoded(seat.tokens, finished=False)
            todo = [s for s in todo if s.result is None]
            if not todo:
                return
            if self._bitmasks.shape[0] < len(todo):
                self._bitmasks = self._xgr.allocate_token_bitmask(len(todo), self.vocab_size)
            self._filler.batch_fill_next_token_bitmask([s.matcher for s in todo], self._bitmasks)
            allowed = self._bitmasks[:len(todo)].numpy().view(np.uint32)
            for seat, bits in zip(todo, allowed):
                seat.allowed = bits.copy()
            todo = [s for s in todo if self._take_forced(s)]

    def _take_forced(self, seat: _Seat) -> bool:
        """Take what the grammar forces after the seat's bitmask; True when the seat advanced and
        goes on (its bitmask must be filled again)."""
        count, first = _count_allowed(seat.allowed)
        stops_allowed = sum(int(seat.allowed[t // 32] >> (t % 32)) & 1 for t in self.stop_ids)
        if count and stops_allowed == count:  # the JSON is complete: only a stop token fits
            self._accept(seat, first)
            return False
        if count == 1:
            self.stats.forced_tokens += 1
            self._accept(seat, first)
            return seat.result is None
        return self._jump_forward(seat) > 0

    def _jump_forward(self, seat: _Seat) -> int:
        """Take the tokens of the string the grammar forces next, all but the last; how many."""
        if self.tokenizer is None:
            return 0
        text = seat.matcher.find_jump_forward_string()
        if not text:
            return 0
        tokens = self._jump_tokens.get(text)
        if tokens is None:
            tokens = self.tokenizer.encode(text, add_special_tokens=False)
            if self.tokenizer.decode(tokens) != text:  # e.g. a SentencePiece prefix space
                tokens = []
            self._jump_tokens[text] = tokens = tokens[:-1]
        room = seat.row.budget - len(seat.tokens) - 1  # keep a token for the model (or the stop)
        taken = 0
        for token in tokens[:max(0, room)]:
            if not seat.matcher.accept_token(token):
                break  # a tokenization the grammar does not take: the model goes on from here
            seat.tokens.append(token)
            seat.feed.append(token)
            taken += 1
        self.stats.forced_tokens += taken
        self.stats.new_tokens += taken
        return taken

    # --- model side -------------------------------------------------------------------------

    def _forward(self, input_ids, mask, positions, cache):
        torch = self._torch
        self.stats.forward_passes += 1
        with torch.inference_mode():
            out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                             use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
        return out.logits[:, -1, :]

    def _prefill(self, seats: list[_Seat]):
        """Left-padded prompts (plus their forced tokens) of newly seated rows, in a new cache.

        A prefix all the prompts share (system prompt, instructions of one template) is computed
        once and its cache rows copied to every row; the rest follows it, left-padded."""
        torch = self._torch
        from transformers import DynamicCache

        prompts = [s.row.prompt_ids + s.feed for s in seats]
        cache = DynamicCache(config=self.model.config)
        shared = _shared_prefix(prompts) if len(prompts) > 1 and _full_attention(cache) else 0
        if shared < self.min_shared_prefix:
            shared = 0
        if shared:
            prefix = torch.tensor([prompts[0][:shared]], dtype=torch.long, device=self.device)
            self._forward(prefix, torch.ones_like(prefix), torch.arange(shared, device=self.device)[None], cache)
            for layer in cache.layers:
                layer.keys = layer.keys.expand(len(prompts), -1, -1, -1).contiguous()
                layer.values = layer.values.expand(len(prompts), -1, -1, -1).contiguous()
            self.stats.shared_prefix_tokens += shared * (len(prompts) - 1)
        rests = [p[shared:] for p in prompts]
        width = max(len(r) for r in rests)
        ids = torch.full((len(seats), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seats), width), dtype=torch.long)
        for i, rest in enumerate(rests):  # left padding: every prompt ends in the last column
            ids[i, width - len(rest):] = torch.tensor(rest, dtype=torch.long)
            mask[i, width - len(rest):] = 1
        positions = shared + (mask.cumsum(-1) - 1).clamp(min=0)
        mask = torch.cat([torch.ones((len(seats), shared), dtype=torch.long), mask], dim=1)
        ids, mask, positions = ids.to(self.device), mask.to(self.device), positions.to(self.device)
        self.stats.prefills += 1
        return self._forward(ids, mask, positions, cache), cache, mask

    def _step(self, seats: list[_Seat], cache, mask):
        """Feed every seat its pending tokens (right-aligned; shorter feeds padded and masked)."""
        torch = self._torch
        width = max(len(s.feed) for s in seats)
        ids = torch.full((len(seats), width), self.pad_id, dtype=torch.long)
        new_mask = torch.zeros((len(seats), width), dtype=torch.long)
        positions = torch.zeros((len(seats), width), dtype=torch.long)
        for i, seat in enumerate(seats):
            n = len(seat.feed)
            ids[i, width - n:] = torch.tensor(seat.feed, dtype=torch.long)
            new_mask[i, width - n:] = 1
            positions[i, :] = seat.position  # masked slots get any position; they are never attended
            positions[i, width - n:] = torch.arange(seat.position, seat.position + n)
        mask = torch.cat([mask, new_mask.to(self.device)], dim=1)
        logits = self._forward(ids.to(self.device), mask, positions.to(self.device), cache)
        return logits, mask

    def _merge(self, cache, mask, new_cache, new_mask):
        """Stack newly prefilled rows under the running ones, left-padding the shorter part."""
        if cache is None:
            return new_cache, new_mask
        torch = self._torch
        width = max(mask.shape[1], new_mask.shape[1])

        def pad(t, dim_from_end):  # left-pad dimension -dim_from_end to `width`
            missing = width - t.shape[-dim_from_end]
            if not missing:
                return t
            spec = [0, 0] * (dim_from_end - 1) + [missing, 0]
            return torch.nn.functional.pad(t, spec)

        for layer, new_layer in zip(cache.layers, new_cache.layers):
            layer.keys = torch.cat([pad(layer.keys, 2), pad(new_layer.keys, 2)], dim=0)
            layer.values = torch.cat([pad(layer.values, 2), pad(new_layer.values, 2)], dim=0)
        return cache, torch.cat([pad(mask, 1), pad(new_mask, 1)], dim=0)

    def _compact(self, cache, mask):
        """Close the padding holes that ragged feeds leave, once they make the cache much wider
        than its longest row: each row's cached tokens move right, in order (position ids are
        explicit, so nothing else changes)."""
        width = mask.shape[1]
        longest = int(mask.sum(dim=1).max())
        if width < self.compact_min_width or width <= self.compact_ratio * longest or not _full_attention(cache):
            return mask
        torch = self._torch
        # a stable sort puts each row's masked columns first and keeps its tokens in order
        keep = torch.sort(mask.to(torch.int8), dim=1, stable=True).indices[:, width - longest:]

        def take(t):  # t: (rows, heads, columns, dim)
            return torch.gather(t, 2, keep[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3]))

        for layer in cache.layers:
            layer.keys, layer.values = take(layer.keys), take(layer.values)
        self.stats.compactions += 1
        return torch.gather(mask, 1, keep)

    def _evict(self, seats: list[_Seat], cache, mask, results: list):
        """Drop finished rows from the batch and cache columns no remaining row attends to."""
        done = [s for s in seats if s.result is not None]
        if not done:
            return seats, cache, mask
        for seat in done:
            results[seat.index] = seat.result
        keep = [i for i, s in enumerate(seats) if s.result is None]
        if not keep:
            return [], None, None
        index = self._torch.tensor(keep, device=mask.device)
        cache.batch_select_indices(index)
        mask = mask[index]
        if _full_attention(cache):
            first = int(mask.any(dim=0).nonzero()[0])
            if first:
                for layer in cache.layers:
                    layer.keys = layer.keys[:, :, first:]
                    layer.values = layer.values[:, :, first:]
                mask = mask[:, first:]
        return [seats[i] for i in keep], cache, mask


def _full_attention(cache) -> bool:
    """True when every layer is a plain growing full-attention cache (rows can be stacked)."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _mergeable(cache) -> bool:
    """Whether newly prefilled rows can be stacked under this running cache (None: no batch yet)."""
    return cache is None or _full_attention(cache)


def _shared_prefix(prompts: list[list[int]]) -> int:
    """Length of the prefix all prompts share, leaving every prompt at least one token of its own."""
    shortest = min(len(p) for p in prompts) - 1
    first = prompts[0]
    n = 0
    while n < shortest and all(p[n] == first[n] for p in prompts):
        n += 1
    return n


def _count_allowed(bits: np.ndarray) -> tuple[int, int]:
    """(number of allowed tokens, the first allowed token id) of an xgrammar bitmask row."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        count = int(np.bitwise_count(bits).sum())
    else:
        count = int(np.unpackbits(bits.view(np.uint8)).sum())
    if not count:
        return 0, -1
    word = int(np.flatnonzero(bits)[0])
    value = int(bits[word])
    return count, 32 * word + (value & -value).bit_length() - 1


__all__ = ["DecodeRow", "Decoded", "DecodeStats", "GrammarDecoder"]
