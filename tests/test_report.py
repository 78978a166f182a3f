"""`evallocal report`: one self-contained HTML page, checked for structure and in a real browser."""

import json
import re
import struct
import sys
import zlib
from pathlib import Path

import pytest

from evallocal.cli import main
from evallocal.manifest import write_manifest
from evallocal.report import build_report

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import render_report  # noqa: E402


def hallucination_result(i, score, error=None):
    claims = [f"Claim {i}.{k} about the Eiffel tower" for k in range(3)]
    verdicts = [{"statement": c, "verdict": "yes" if k < round(score * 3) else "no",
                 "reason": f"reason for claim {k} of item {i}"} for k, c in enumerate(claims)]
    return {"scorerId": "hallucination-scorer", "runId": f"item-{i}", "score": None if error else score,
            "reason": None if error else f"The score is {score} because of claims.",
            "preprocessStepResult": None if error else {"claims": claims},
            "analyzeStepResult": None if error else {"verdicts": verdicts},
            "error": error, "rawReply": "{\"verdicts\": [oops" if error else None}


def completeness_result(i, score):
    return {"scorerId": "completeness-scorer", "runId": f"item-{i}", "score": score,
            "preprocessStepResult": {"inputElements": ["tower", "paris"], "outputElements": ["tower"],
                                     "missingElements": ["paris"], "elementCounts": {"input": 2, "output": 1}}}


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "results.jsonl"
    lines = []
    for i in range(1, 41):
        if i == 7:
            lines.append({"line": i, "error": "line 7: invalid JSON (Expecting value at column 1)"})
            continue
        error = "analyze: expected 3 entries in 'verdicts', got 2" if i in (9, 23) else None
        lines.append({"line": i, "id": f"item-{i}", "results": {
            "hallucination-scorer": hallucination_result(i, round((i % 4) / 3, 2), error),
            "completeness-scorer": completeness_result(i, (i % 10) / 10)}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    write_manifest(tmp_path / "results.manifest.json", {
        "evallocal": {"version": "0.1.0", "git_commit": "abc123"},
        "judges": {"nli": {"weights_sha256": "f" * 64, "dtype": "float32"}},
        "settings": {"seed": 0, "chunk_size": 256},
        "scorers": {"hallucination-scorer": {"options": {"scale": 1}}}})
    return path


def test_html_structure(results):
    html = build_report(results, worst=5)
    assert html.startswith("<!DOCTYPE html>")
    assert len(re.findall(r"<svg\b", html)) == 2  # one histogram per scorer
    assert html.count("<rect") >= 40
    assert "<table" in html and "completeness-scorer" in html and "hallucination-scorer" in html
    # worst items carry claims, verdicts and reasons
    assert "Claim 3.0 about the Eiffel tower" in html and 'class="yes"' in html and "reason for claim 0" in html
    assert "missingElements" in html
    # not-scorable items with their errors and raw replies; malformed lines
    assert "expected 3 entries in &#x27;verdicts&#x27;" in html and "item-23" in html
    assert "line 7: invalid JSON" in html
    # the manifest
    assert "judges.nli.weights_sha256" in html and "abc123" in html
    # self-contained: no scripts, no external references of any kind
    assert "<script" not in html and "<link" not in html and "<img" not in html and "@import" not in html
    assert not re.search(r"https?://", html)
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)


def test_worst_items_are_the_worst(results):
    html = build_report(results, worst=3)
    worst = html[html.index('id="worst"'):html.index('id="not-scorable"')]
    halluc = worst[worst.index("hallucination-scorer"):worst.index("completeness-scorer (")]
    assert halluc.count('class="item"') == 3 and "score 1.0" in halluc and "score 0.0" not in halluc
    complete = worst[worst.index("completeness-scorer ("):]
    assert complete.count('class="item"') == 3 and "score 0.0" in complete and "score 0.9" not in complete


def test_report_of_a_real_run_and_parquet(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALLOCAL_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "demo.parquet"
    assert main(["score", str(REPO / "examples" / "demo.jsonl"), "--scorer", "completeness", "--out", str(out),
                 "--quiet"]) == 0
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "<svg" in html and "environment.libraries.spacy" in html and "capital-fr" in html
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "x.html")]) == 2


def png_size_and_variety(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    return width, height, len(set(raw))


@pytest.mark.skipif(render_report.find_browser() is None,
                    reason="chromium is not installed (apt-get install -y chromium); CI installs it")
def test_renders_in_headless_chromium(results, tmp_path):
    html = tmp_path / "report.html"
    html.write_text(build_report(results))
    png = render_report.render(html, tmp_path / "report.png", width=1200, height=2000)
    assert png.exists() and png.stat().st_size > 20_000
    width, height, distinct_bytes = png_size_and_variety(png)
    assert (width, height) == (1200, 2000)
    assert distinct_bytes > 50  # text, bars and tables, not a blank page


def test_report_of_llm_judged_results_through_the_cache(tmp_path):
    """A hallucination run with a scripted LLM judge: cached the second time (same bytes, no judge
    calls), and its claims / verdicts / reasons appear in the report."""
    from evallocal.cache import JudgeCache
    from evallocal.scorers.hallucination import create_hallucination_scorer
    from evallocal.scoring_run import ScoringRun

    from scripted_judges import llm, prompt_of

    def claims(request):
        text = prompt_of(request).rsplit("TEXT:", 1)[-1].strip()
        return [part.strip() + "." for part in text.split(". ") if part.strip(" .")]

    def verdict(request):
        claim = prompt_of(request).rsplit("CLAIM:", 1)[-1]
        return {"reason": "not in the context" if "Lyon" in claim else "stated in the context",
                "verdict": "yes" if "Lyon" in claim else "no"}

    outputs = []
    with JudgeCache(tmp_path / "cache.sqlite3") as cache:
        for name in ("a.jsonl", "b.jsonl"):
            judge = llm({"claims": claims, "verdict": verdict, "reason": {"reason": "Scripted reason."}})
            scorer = create_hallucination_scorer(judge)
            ScoringRun(str(REPO / "examples" / "demo.jsonl"), [scorer], str(tmp_path / name), cache=cache).execute()
            outputs.append(judge)
    assert outputs[0].calls and not outputs[1].calls
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    html = build_report(tmp_path / "a.jsonl", worst=3)
    assert "The capital of France is Lyon, which has been the seat of government since 1850." in html
    assert "not in the context" in html and 'class="yes"' in html and "fake-llm" in html
