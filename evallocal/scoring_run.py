"""A scoring run into a results file: streamed, cached, resumable and reproducible.

- Input is read record by record and scored `chunk_size` records at a time (bounded memory).
- Every record gives exactly one output line, in input order. A chunk's lines are appended in
  one write and fsynced before the next chunk starts.
- Resume: while a run is unfinished its manifest says `"status": "running"`. The same command
  again (same inputs, scorers, judges, settings: the manifest identity) keeps the whole chunks
  already written, drops a torn tail, skips those input records and goes on; the finished file
  equals an uninterrupted run's byte for byte. A different manifest is refused, with the
  differences listed. A finished run's output is simply overwritten by a new run.
- Determinism: seeds are reset before every chunk and torch runs deterministic algorithms,
  so a chunk's results depend only on its records.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import sys
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .cache import JudgeCache, CachedJudge
from .errors import InputError
from .formats import (INPUT_FORMATS, OUTPUT_FORMATS, count_records, detect_format, dump_line, iter_records,
                      jsonl_to_parquet, read_records)
from .manifest import (build_manifest, describe_judge, diff, file_sha256, format_diff, load_manifest, manifest_path,
                       scorer_judges, write_manifest)
from .records import FieldMap, Record, chunks, to_item
from .runner import run_scorers
from .summary import RunSummary

log = logging.getLogger("evallocal.run")


class RunError(RuntimeError):
    """The run cannot start or go on; the message says why and what to do."""


@dataclass
class RunPaths:
    out: Path
    errors: Path
    manifest: Path
    work: Path  # the JSON-lines file written chunk by chunk (the output itself for JSONL)
    out_format: str


def _strip_suffix(name: str) -> str:
    for suffix in (".jsonl", ".parquet"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def run_paths(out: str | os.PathLike, out_format: str | None = None, errors: str | os.PathLike | None = None) -> RunPaths:
    out = Path(out)
    fmt = detect_format(out, out_format, OUTPUT_FORMATS, "output")
    errors_path = Path(errors) if errors else out.with_name(_strip_suffix(out.name) + ".errors.jsonl")
    work = out if fmt == "jsonl" else out.with_name(out.name + ".partial.jsonl")
    return RunPaths(out, errors_path, manifest_path(out), work, fmt)


def seed_everything(seed: int) -> None:
    """Fixed seeds; deterministic torch kernels when torch is loaded (it is not imported here)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS (read at CUDA start)
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        try:
            torch.use_deterministic_algorithms(True, warn_only=True)
        except Exception:  # older builds: best effort
            pass


def _check_writable(paths: RunPaths) -> None:
    """Fail before any judge work when an output cannot be written."""
    for path in dict.fromkeys([paths.work, paths.errors, paths.manifest, paths.out]):
        try:
            existed = path.exists()
            with open(path, "ab"):
                pass
            if not existed:
                path.unlink()
        except OSError as exc:
            raise RunError(f"cannot write {path}: {exc.strerror or exc}. Choose a writable --out"
                           f"{' / --errors' if path == paths.errors else ''} path.") from None


def _committed_lines(work: Path, chunk_size: int) -> tuple[int, int]:
    """(records kept, byte length kept): the whole chunks of complete lines already written."""
    if not work.exists():
        return 0, 0
    offsets = [0]
    with open(work, "rb") as handle:
        position = 0
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # a torn last line
            position += len(raw)
            offsets.append(position)
    complete = len(offsets) - 1
    kept = complete // chunk_size * chunk_size
    return kept, offsets[kept]


def _input_info(source: Any, in_format: str | None, fields: FieldMap) -> dict:
    info = {"format": in_format, "fields": dataclasses.asdict(fields)}
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        info.update(path=str(path), bytes=path.stat().st_size, sha256=file_sha256(path))
    else:
        info.update(path=None, sha256=None, iterable=type(source).__name__)
    return info


class ScoringRun:
    """One `evallocal score` run. Build it, then call `execute()`."""

    def __init__(self, source: str | os.PathLike | Iterable[Any], scorers: Sequence[Any], out: str | os.PathLike, *,
                 fields: FieldMap = FieldMap(), input_format: str | None = None, output_format: str | None = None,
                 errors: str | os.PathLike | None = None, chunk_size: int = 256, seed: int = 0,
                 cache: JudgeCache | None = None, restart: bool = False, progress: bool = False):
        if chunk_size < 1:
            raise RunError(f"--chunk-size must be at least 1, got {chunk_size}")
        self.source = source
        self.from_file = isinstance(source, (str, os.PathLike))
        self.scorers = list(scorers)
        self.fields = fields
        self.in_format = detect_format(source, input_format, INPUT_FORMATS, "input") if self.from_file else "iterable"
        self.paths = run_paths(out, output_format, errors)
        self.chunk_size = chunk_size
        self.seed = seed
        self.cache = cache
        self.restart = restart
        self.progress = progress
        self.summary = RunSummary()
        self.resumed_from = 0
        self._wrappers: dict[int, tuple[Any, CachedJudge]] = {}

    # -- judges ----------------------------------------------------------------------------------

    def wrap_judge(self, judge):
        """One wrapper per judge object (cache in front, or timing/logging only)."""
        if self.cache is not None:
            return self.cache.wrap(judge)
        entry = self._wrappers.get(id(judge))
        if entry is None:
            entry = (judge, CachedJudge(judge, None))
            self._wrappers[id(judge)] = entry
        return entry[1]

    # -- the run ---------------------------------------------------------------------------------

    def manifest(self) -> dict:
        for scorer in self.scorers:  # load the judges first, so the seeds reach torch if they use it
            for judge in scorer_judges(scorer):
                describe_judge(judge)
        seed_everything(self.seed)
        return build_manifest(
            self.scorers,
            input=_input_info(self.source, self.in_format, self.fields),
            settings={"chunk_size": self.chunk_size, "seed": self.seed, "deterministic_algorithms": True},
            output={"path": str(self.paths.out), "format": self.paths.out_format, "errors": str(self.paths.errors)},
            cache={"enabled": self.cache is not None, "path": str(self.cache.path) if self.cache else None},
        )

    def _resume_point(self, manifest: dict) -> int:
        """How many records to keep from an unfinished run of the same manifest (0: start over)."""
        if self.restart or not self.from_file or not self.paths.manifest.exists():
            return 0
        try:
            previous = load_manifest(self.paths.manifest)
        except (OSError, ValueError):
            return 0  # not ours or unreadable: a fresh run overwrites it, as before
        if previous.get("run", {}).get("status") != "running":
            return 0
        if not self.paths.work.exists():
            return 0
        changes = diff(previous, manifest, only_identity=True)
        if changes:
            shown = format_diff(changes[:15]) + (f"\n... and {len(changes) - 15} more" if len(changes) > 15 else "")
            raise RunError(
                f"{self.paths.out} holds an unfinished run with a different manifest, so it cannot be resumed:\n"
                f"{shown}\n"
                f"Rerun with --restart to start {self.paths.out} over, or choose a new --out.")
        kept, size = _committed_lines(self.paths.work, self.chunk_size)
        with open(self.paths.work, "r+b") as handle:
            handle.truncate(size)
        return kept

    def _rebuild(self, kept: int) -> None:
        """Totals and errors file from the lines kept by a resume."""
        with open(self.paths.work, encoding="utf-8") as work, open(self.paths.errors, "w", encoding="utf-8") as errors:
            for text in islice(work, kept):
                line = json.loads(text)
                self.summary.add_line(line)
                if "error" in line:
                    errors.write(json.dumps({"line": line["line"], "error": line["error"]}, ensure_ascii=False) + "\n")

    def records(self) -> Iterator[Record]:
        if self.from_file:
            return read_records(self.source, self.in_format, (self.fields.input, self.fields.output))
        return iter_records(self.source)

    def execute(self) -> RunSummary:
        paths = self.paths
        if self.from_file and not Path(self.source).is_file():
            raise RunError(f"input file not found: {self.source}")
        _check_writable(paths)
        manifest = self.manifest()
        kept = self._resume_point(manifest)
        self.resumed_from = kept
        if kept:
            self._rebuild(kept)
            log.info("resuming %s after %d records", paths.out, kept)
        else:
            open(paths.work, "wb").close()
            open(paths.errors, "wb").close()
        if paths.work != paths.out and paths.out.exists() and paths.out.stat().st_size == 0:
            paths.out.unlink()  # left by the writability check
        write_manifest(paths.manifest, manifest)

        total = count_records(self.source, self.in_format) if self.from_file else (
            len(self.source) if hasattr(self.source, "__len__") else None)
        from tqdm import tqdm

        with open(paths.work, "ab") as work, open(paths.errors, "ab") as errors, \
                tqdm(desc="scoring", unit="item", total=total, initial=kept, disable=not self.progress,
                     file=sys.stderr, dynamic_ncols=True, smoothing=0.1) as bar:
            for chunk in chunks(islice(self.records(), kept, None), self.chunk_size):
                seed_everything(self.seed)
                lines, error_lines = self.score_chunk(chunk)
                if self.cache is not None and self.cache.failed is not None:
                    raise self.cache.failed  # results of this chunk are suspect: not written
                _append(work, "".join(dump_line(line) for line in lines))
                if error_lines:
                    _append(errors, "".join(error_lines))
                bar.update(len(chunk))

        if paths.out_format == "parquet":
            jsonl_to_parquet(paths.work, paths.out, [s.id for s in self.scorers])
            paths.work.unlink()
        manifest["run"] = {"status": "complete", "resumed_after_records": kept, **self.summary.counts()}
        if self.cache is not None:
            manifest["run"]["cache"] = {"hits": self.cache.hits, "misses": self.cache.misses,
                                        "stored": self.cache.stored}
        write_manifest(paths.manifest, manifest)
        return self.summary

    def score_chunk(self, chunk: list[Record]) -> tuple[list[dict], list[str]]:
        """Score the well-formed records of a chunk together; one output object per record."""
        items, lines, error_lines = [], [], []
        for record in chunk:
            self.summary.lines += 1
            error = record.error
            if error is None:
                try:
                    items.append(to_item(record, self.fields))
                except InputError as exc:
                    error = str(exc)
            if error is not None:
                self.summary.bad(record.line, error)
                error_lines.append(json.dumps({"line": record.line, "error": error}, ensure_ascii=False) + "\n")
                lines.append({"line": record.line, "error": error})
            else:
                lines.append({"line": record.line, "id": items[-1].run_id})
        results = iter(run_scorers(items, self.scorers, wrap_judge=self.wrap_judge))
        for line in lines:
            if "error" not in line:
                row = next(results)
                line["results"] = {scorer.id: result.to_dict() for scorer, result in zip(self.scorers, row)}
                for scorer, result in zip(self.scorers, row):
                    self.summary.add(scorer.id, result)
        return lines, error_lines


def _append(handle, text: str) -> None:
    handle.write(text.encode("utf-8"))
    handle.flush()
    os.fsync(handle.fileno())


def score_file(source, scorers, out, **options) -> RunSummary:
    """Score a data file (JSONL, CSV, Parquet) or an iterable of dicts into `out` (JSONL or
    Parquet), resumably. See `ScoringRun` for the options."""
    return ScoringRun(source, scorers, out, **options).execute()
