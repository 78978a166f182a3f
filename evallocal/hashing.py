"""sha256 of files and texts: model verification, manifests and cache keys use the same helper."""

from __future__ import annotations

import hashlib
import os

_BLOCK = 1 << 20
# Remembered per (path, size, mtime) within the process: model folders are hashed once per run.
_file_hashes: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file, streamed."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)
    if key not in _file_hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(_BLOCK):
                digest.update(block)
        _file_hashes[key] = digest.hexdigest()
    return _file_hashes[key]


def forget_file_hashes() -> None:
    """Drop remembered hashes (for a file rewritten within the same mtime tick)."""
    _file_hashes.clear()


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
