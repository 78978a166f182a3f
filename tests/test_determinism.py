"""Two runs on the same inputs give byte-identical result files (separate processes, different
hash seeds, no cache), on the embedded models."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo.jsonl"


def embedding_judge_available() -> str | None:
    """Why answer relevancy (embedding mode) cannot run here, or None when it can."""
    if importlib.util.find_spec("evallocal.judges.defaults") is None:
        return "evallocal.judges.defaults (the embedded embedding judge) is not there yet"
    try:
        from evallocal.judges.defaults import default_embedding_judge

        default_embedding_judge().answer([__import__("evallocal.types").types.EmbedRequest("probe")])
    except Exception as exc:  # the model files are missing on this machine
        return f"the embedded embedding judge does not load: {type(exc).__name__}: {exc}"
    return None


def run_twice(tmp_path, scorers, suffix=".jsonl", one_cache_folder=False):
    """`one_cache_folder`: both runs share the folder (the converted GGUF model), not the judge cache."""
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"run{hash_seed}{suffix}"
        cache = tmp_path / ("cache" if one_cache_folder else f"cache{hash_seed}")
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO), "EVALLOCAL_CACHE": str(cache)}
        command = [sys.executable, "-m", "evallocal", "score", str(DEMO), "--out", str(out), "--quiet", "--no-cache",
                   "--chunk-size", "5"]
        for scorer in scorers:
            command += ["--scorer", scorer]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(out)
    return outputs


def test_runs_on_the_embedded_models_are_byte_identical(tmp_path):
    """completeness (spaCy) and, when its model is here, answer relevancy (embedding judge)."""
    missing = embedding_judge_available()
    scorers = ["completeness"] + ([] if missing else ["answer-relevancy"])
    first, second = run_twice(tmp_path, scorers)
    assert first.read_bytes() == second.read_bytes()
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert len(rows) == 12
    for row in rows:  # no run-dependent values: ids come from the data
        for result in row["results"].values():
            assert result["runId"] == row["id"] and result["score"] is not None
    m1 = json.loads(first.with_name("run1.manifest.json").read_text())
    m2 = json.loads(second.with_name("run2.manifest.json").read_text())
    from evallocal.manifest import diff

    assert diff(m1, m2, only_identity=True) == []
    if missing:
        pytest.skip(f"completeness checked; answer relevancy not checked: {missing}")


@pytest.mark.slow
def test_runs_on_the_embedded_llm_are_byte_identical(tmp_path):
    """bias on SmolLM2: continuous batching, jump-forward and shared prefixes are deterministic."""
    first, second = run_twice(tmp_path, ["bias"], one_cache_folder=True)
    assert first.read_bytes() == second.read_bytes()
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert len(rows) == 12 and all(row["results"]["bias-scorer"]["score"] is not None for row in rows)


def test_parquet_results_are_byte_identical(tmp_path):
    from evallocal.scoring_run import ScoringRun

    from fakes import EchoJudge, TwoStepScorer

    for name in ("a.parquet", "b.parquet"):
        ScoringRun(str(DEMO), [TwoStepScorer(EchoJudge())], str(tmp_path / name), chunk_size=5).execute()
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
