"""Content-addressed judge cache: a rerun on the same data asks the judges nothing.

Key = sha256 of canonical JSON {judge identity, request kind, request fields}. The judge
identity is its manifest description (name, model file hashes, tokenizer / chat-template
hashes, dtype, decoding settings; see `manifest.describe_judge`) less settings that do not
change answers (batch sizes). So changing one prompt changes exactly the requests that carry
it, and changing a model changes exactly that model's keys.

Storage: one SQLite file in WAL mode (safe against kill -9; readers never block the writer),
answers stored as JSON through a small generic codec (dataclasses such as `ParsedText`, tuples,
numpy arrays round-trip exactly). `JudgeFailure` answers are never stored.

`CachedJudge(judge, cache)` stands in front of one judge and asks it only for the misses;
`JudgeCache.wrap(judge)` returns the same wrapper for the same judge object, because the
runner batches by judge object identity.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import logging
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Sequence

from .judges.base import Judge
from .types import JudgeFailure, Request

log = logging.getLogger("evallocal.cache")

CACHE_FILE = "judge-cache.sqlite3"
KEY_VERSION = 1
# describe() keys that do not change a judge's answers (left out of cache keys, kept in manifests).
NON_IDENTITY_KEYS = frozenset({"batch_size", "n_process", "num_threads", "threads", "max_batch_size",
                               "max_batch_tokens", "cache", "local_path", "batching"})
_SQL_CHUNK = 500


class CacheError(RuntimeError):
    """The cache file cannot be used; the message names the file and the way out."""


def default_cache_dir() -> Path:
    """$EVALLOCAL_CACHE, else $XDG_CACHE_HOME/evallocal, else ~/.cache/evallocal."""
    if os.environ.get("EVALLOCAL_CACHE"):
        return Path(os.environ["EVALLOCAL_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "evallocal"
    return Path.home() / ".cache" / "evallocal"


def default_cache_path() -> Path:
    return default_cache_dir() / CACHE_FILE


def _way_out(path: Path) -> str:
    return (f"Delete it with `evallocal cache clear` (or remove {path} and its -wal/-shm files), "
            f"or run without the cache: `evallocal score ... --no-cache`.")


# --- codec: answers <-> JSON ------------------------------------------------------------------


class CodecError(TypeError):
    """A value the cache codec cannot store exactly (the answer is then simply not cached)."""


def encode(value: Any) -> Any:
    """A JSON-ready form of `value` from which `decode` rebuilds an equal value of the same types."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}}
    module = type(value).__module__
    if module == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return {"__ndarray__": encode(value.tolist()), "dtype": str(value.dtype), "shape": list(value.shape)}
        if isinstance(value, np.generic):
            return {"__npscalar__": encode(value.item()), "dtype": str(value.dtype)}
    raise CodecError(f"cannot cache a {type(value).__module__}.{type(value).__qualname__}")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__float__" in value:
        return float(value["__float__"])
    if "__dict__" in value:
        return {decode(k): decode(v) for k, v in value["__dict__"]}
    if "__dataclass__" in value:
        return _dataclass(value["__dataclass__"])(**{k: decode(v) for k, v in value["fields"].items()})
    if "__ndarray__" in value:
        import numpy as np

        return np.array(decode(value["__ndarray__"]), dtype=value["dtype"]).reshape(value["shape"])
    if "__npscalar__" in value:
        import numpy as np

        return np.dtype(value["dtype"]).type(value["__npscalar__"])
    return {k: decode(v) for k, v in value.items()}


def _dataclass(ref: str) -> type:
    module, _, qualname = ref.partition(":")
    if not (module == "evallocal" or module.startswith("evallocal.")):
        raise CodecError(f"refusing to rebuild {ref}: only evallocal's own answer types are cached")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not dataclasses.is_dataclass(obj):
        raise CodecError(f"{ref} is not a dataclass")
    return obj


def canonical_json(value: Any) -> str:
    return json.dumps(encode(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def request_fields(request: Request) -> dict:
    return {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}


def judge_identity(judge: Judge) -> dict:
    """What makes a judge's answers what they are (its description less batch settings)."""
    from .manifest import describe_judge

    return {k: v for k, v in describe_judge(judge).items() if k not in NON_IDENTITY_KEYS}


def request_key(identity_json: str, request: Request) -> str:
    text = (f'{{"v":{KEY_VERSION},"judge":{identity_json},"kind":{json.dumps(request.kind)},'
            f'"request":{canonical_json(request_fields(request))}}}')
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the store --------------------------------------------------------------------------------


class JudgeCache:
    """The SQLite store. Opening checks the file at once: a corrupted cache fails before any
    judge work, with a message that names the file and the way out."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self.failed: CacheError | None = None
        self._wrappers: dict[int, tuple[Judge, CachedJudge]] = {}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot create the judge cache directory {self.path.parent}: {exc}. "
                             f"Set EVALLOCAL_CACHE to a writable directory, or run with --no-cache.") from None
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db.execute("PRAGMA busy_timeout = 30000")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, judge TEXT NOT NULL, "
                            "kind TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL)")
            self.db.execute("SELECT count(*) FROM (SELECT key FROM answers LIMIT 1)").fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    def _corrupt(self, exc: Exception | str) -> CacheError:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
            error = CacheError(f"the judge cache {self.path} stayed locked by another process for 30 s ({text}). "
                               f"Wait for the other run, or run with --no-cache.")
        elif isinstance(exc, sqlite3.OperationalError) and ("unable to open" in text or "readonly" in text):
            error = CacheError(f"cannot open the judge cache {self.path} for writing ({text}). Set EVALLOCAL_CACHE "
                               f"to a writable directory, or run with --no-cache.")
        else:
            error = CacheError(f"the judge cache {self.path} is corrupted or not an SQLite database ({text}). "
                               f"{_way_out(self.path)}")
        self.failed = error
        return error

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> "JudgeCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def wrap(self, judge: Judge) -> "CachedJudge":
        """The one wrapper of `judge` (same object each time: the runner batches by identity)."""
        if isinstance(judge, CachedJudge):
            return judge
        entry = self._wrappers.get(id(judge))
        if entry is None:
            entry = (judge, CachedJudge(judge, self))  # holding the judge keeps its id unique
            self._wrappers[id(judge)] = entry
        return entry[1]

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), _SQL_CHUNK):
                part = unique[start:start + _SQL_CHUNK]
                rows = self.db.execute(f"SELECT key, value FROM answers WHERE key IN ({','.join('?' * len(part))})",
                                       part).fetchall()
                for key, value in rows:
                    found[key] = decode(json.loads(value))
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        except (ValueError, TypeError, CodecError, AttributeError, ImportError) as exc:
            raise self._corrupt(f"an entry cannot be decoded: {exc}") from None
        return found

    def put_many(self, entries: list[tuple[str, str, str, Any]]) -> None:
        """Store (key, judge name, kind, answer) rows in one transaction."""
        rows = []
        now = time.time()
        for key, judge_name, kind, answer in entries:
            try:
                rows.append((key, judge_name, kind, canonical_json(answer), now))
            except (CodecError, ValueError) as exc:
                log.debug("not caching an answer of %s: %s", judge_name, exc)
        if not rows:
            return
        try:
            with self.db:
                self.db.execute("BEGIN")
                self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        self.stored += len(rows)

    def stats(self) -> dict:
        try:
            total = self.db.execute("SELECT count(*) FROM answers").fetchone()[0]
            by_judge = self.db.execute("SELECT judge, kind, count(*) FROM answers GROUP BY judge, kind "
                                       "ORDER BY judge, kind").fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        size = sum(p.stat().st_size for p in cache_files(self.path) if p.exists())
        return {"path": str(self.path), "entries": total, "bytes": size,
                "by_judge": [{"judge": j, "kind": k, "entries": n} for j, k, n in by_judge]}


def cache_files(path: Path) -> list[Path]:
    return [path, Path(str(path) + "-wal"), Path(str(path) + "-shm")]


def clear_cache(path: str | os.PathLike | None = None) -> list[Path]:
    """Delete the cache file and its WAL/SHM companions (works on a corrupted file too)."""
    path = Path(path) if path is not None else default_cache_path()
    removed = []
    for file in cache_files(path):
        if file.exists():
            file.unlink()
            removed.append(file)
    return removed


# --- the wrapping judge -----------------------------------------------------------------------


class CachedJudge(Judge):
    """A judge in front of `inner`: answers from the cache, asks `inner` only for the misses
    (each distinct request once), stores the new answers (never failures). With `cache=None` it
    only times and logs each batch."""

    def __init__(self, inner: Judge, cache: JudgeCache | None):
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.kinds = inner.kinds
        self._identity_json: str | None = None

    def describe(self) -> dict:
        return self.inner.describe()

    @property
    def identity_json(self) -> str:
        if self._identity_json is None:
            self._identity_json = canonical_json(judge_identity(self.inner))
        return self._identity_json

    def _answer(self, requests: list[Request]) -> list[Any]:
        started = time.perf_counter()
        chars = sum(r.size() for r in requests)
        if self.cache is None:
            answers = self.inner.answer(requests)
            _log_batch(self.name, len(requests), None, chars, started, self.inner)
            return answers
        keys = [request_key(self.identity_json, r) for r in requests]
        found = self.cache.get_many(keys)
        missing: dict[str, Request] = {}
        for key, request in zip(keys, requests):
            if key not in found and key not in missing:
                missing[key] = request
        hits = sum(key in found for key in keys)
        self.cache.hits += hits
        self.cache.misses += len(requests) - hits
        if missing:
            fresh = self.inner.answer(list(missing.values()))
            new = dict(zip(missing, fresh))
            self.cache.put_many([(k, self.name, missing[k].kind, a) for k, a in new.items()
                                 if not isinstance(a, JudgeFailure)])
            found.update(new)
        _log_batch(self.name, len(requests), hits, chars, started, self.inner)
        return [found[key] for key in keys]


def _log_batch(name: str, n: int, hits: int | None, chars: int, started: float, inner: Judge) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    tokens = getattr(inner, "last_batch_tokens", None)
    log.debug("judge %s batch: %d requests%s, %d chars%s, %.3fs", name, n,
              "" if hits is None else f" ({hits} cached, {n - hits} computed)", chars,
              "" if tokens is None else f", {tokens} tokens", time.perf_counter() - started)
