#!/usr/bin/env python
"""Prepare judge models for an air-gapped machine (run this on a CONNECTED machine).

For each registry model (models/registry.toml) that has a hub id, download its files at the
registered revision with huggingface_hub into OUT/<name>/, record the commit the revision
resolved to, write OUT/<name>/SHA256SUMS, and write OUT/registry.toml: the registry with those
revisions and file hashes filled in. Copy OUT to the offline machine and point evallocal at it:

    python scripts/prepare_models.py --out /media/usb/evallocal-models qwen2.5-7b-instruct
    # offline machine:
    export EVALLOCAL_MODELS=/media/usb/evallocal-models
    evallocal models verify qwen2.5-7b-instruct

`--hash-only FOLDER` writes SHA256SUMS for a folder already on disk (e.g. the NLI model that
scripts/train_nli.py exports into models/) and prints the `files = [...]` lines for the registry.

Importing this file does nothing (no network, no huggingface_hub import).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
from evallocal.hashing import file_sha256  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# what a judge needs: weights, configs, tokenizer (no .bin/.pth/.onnx duplicates, no READMEs' images)
ALLOW = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken", "LICENSE*", "README.md"]
SKIP_HASH = {"SHA256SUMS"}


def write_hashes(folder: Path) -> dict[str, str]:
    """Hash every file under `folder` (recursively, hidden folders skipped) into SHA256SUMS."""
    folder = Path(folder)
    hashes: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or rel in SKIP_HASH or any(part.startswith(".") for part in Path(rel).parts):
            continue
        hashes[rel] = file_sha256(path)
    (folder / "SHA256SUMS").write_text("".join(f"{sha}  {rel}\n" for rel, sha in hashes.items()))
    return hashes


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def render_registry(models: list[dict]) -> str:
    """TOML text for a list of registry entries (the fields models/registry.toml uses)."""
    lines = ["# written by scripts/prepare_models.py", ""]
    order = ["name", "kind", "hub_id", "revision", "licence", "size", "path", "file", "note"]
    for model in models:
        lines.append("[[model]]")
        for key in order + sorted(k for k in model if k not in order and k != "files"):
            if key in model and model[key] is not None and key != "files":
                lines.append(f"{key} = {_toml_str(str(model[key]))}")
        files = model.get("files", [])
        if files:
            lines.append("files = [")
            for f in files:
                lines.append(f"  {{ path = {_toml_str(f['path'])}, sha256 = {_toml_str(f.get('sha256', ''))} }},")
            lines.append("]")
        else:
            lines.append("files = []")
        lines.append("")
    return "\n".join(lines)


def load_registry(path: Path) -> list[dict]:
    try:
        import tomllib
    except ImportError:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as fh:
        return list(tomllib.load(fh).get("model", []))


def download(model: dict, out: Path, token: str | None) -> dict:
    """Download one model at its revision into out/<name>; returns the filled registry entry."""
    from huggingface_hub import HfApi, snapshot_download

    revision = model.get("revision") or "main"
    info = HfApi(token=token).model_info(model["hub_id"], revision=revision)
    target = out / model["name"]
    patterns = [model["file"], "*.json", "*.txt", "*.jinja", "*.model"] if model.get("file") else ALLOW
    snapshot_download(model["hub_id"], revision=info.sha, local_dir=target, allow_patterns=patterns, token=token)
    cache = target / ".cache"
    if cache.is_dir():
        shutil.rmtree(cache)
    hashes = write_hashes(target)
    filled = dict(model)
    filled.update(
        revision=info.sha,
        path=model["name"],
        files=[{"path": rel, "sha256": sha} for rel, sha in hashes.items()],
    )
    return filled


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="registry names (default: all of them; about 90 GB)")
    ap.add_argument("--out", type=Path, default=Path("evallocal-models"), help="folder to fill for the transfer")
    ap.add_argument("--registry", type=Path, default=REPO / "models" / "registry.toml")
    ap.add_argument("--token", help="hub token for gated models (e.g. Llama); else HF_TOKEN / the login cache")
    ap.add_argument("--hash-only", type=Path, metavar="FOLDER", help="only write SHA256SUMS for FOLDER and print registry lines")
    args = ap.parse_args(argv)

    if args.hash_only:
        hashes = write_hashes(args.hash_only)
        print(f"wrote {args.hash_only / 'SHA256SUMS'} ({len(hashes)} files); registry lines:")
        print("files = [")
        for rel, sha in hashes.items():
            print(f"  {{ path = {_toml_str(rel)}, sha256 = {_toml_str(sha)} }},")
        print("]")
        return 0

    registry = load_registry(args.registry)
    chosen = [m for m in registry if not args.names or m["name"] in args.names]
    unknown = set(args.names) - {m["name"] for m in registry}
    if unknown:
        print(f"unknown model(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    filled_by_name = {}
    for model in chosen:
        if not model.get("hub_id"):
            local = args.registry.parent / model["path"]
            if not model["path"].startswith("package:") and local.is_dir():
                # a model shipped in models/ (the NLI judge): carry it along with the others
                shutil.copytree(local, args.out / model["path"], dirs_exist_ok=True)
                print(f"copied {model['name']} from {local}")
            else:
                print(f"skip {model['name']}: no hub id (shipped with evallocal)")
            continue
        print(f"downloading {model['name']} ({model['hub_id']} @ {model.get('revision') or 'main'}) ...", flush=True)
        filled_by_name[model["name"]] = download(model, args.out, args.token)
    # the transferred registry: downloaded entries filled in, the others as they were
    out_models = [filled_by_name.get(m["name"], m) for m in registry]
    (args.out / "registry.toml").write_text(render_registry(out_models))
    print(f"wrote {args.out / 'registry.toml'}; on the offline machine: export EVALLOCAL_MODELS={args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
