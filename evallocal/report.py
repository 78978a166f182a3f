"""`evallocal report`: one self-contained HTML page from a results file (streamed once).

Per scorer: a score histogram (inline SVG) and totals; the worst items with their claims,
verdicts and reasons; the items that could not be scored, with their errors; malformed input
records; and the run manifest. Memory stays bounded: histograms are counts, the worst items a
heap of `worst` entries, the error lists capped.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from .formats import read_results
from .manifest import flatten, load_manifest, manifest_path
from .report_html import histogram_svg, page, table

HIGHER_IS_WORSE = frozenset({"hallucination-scorer", "bias-scorer"})
BINS = 20
VERDICT_KEYS = ("verdict", "result")


@dataclass
class ScorerStats:
    scorer_id: str
    high: float = 1.0  # histogram range [0, high]
    counts: list[int] = field(default_factory=lambda: [0] * BINS)
    scored: int = 0
    not_scorable: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    low_seen: float | None = None
    high_seen: float | None = None
    worst: list = field(default_factory=list)  # heap of (badness, -line, tiebreak, line dict)
    errors: list = field(default_factory=list)

    def add(self, line: dict, result: dict, keep_worst: int, keep_errors: int, order: int) -> None:
        score = result.get("score")
        if score is None or (isinstance(score, float) and math.isnan(score)):
            self.not_scorable += 1
            if len(self.errors) < keep_errors:
                self.errors.append((line.get("line"), line.get("id"), result.get("error"), result.get("rawReply")))
            return
        self.scored += 1
        self.total += score
        self.total_sq += score * score
        self.low_seen = score if self.low_seen is None else min(self.low_seen, score)
        self.high_seen = score if self.high_seen is None else max(self.high_seen, score)
        index = int(min(max(score, 0.0), self.high) / self.high * BINS) if self.high > 0 else 0
        self.counts[min(index, BINS - 1)] += 1
        badness = score if self.scorer_id in HIGHER_IS_WORSE else -score
        entry = (badness, -order, {"line": line.get("line"), "id": line.get("id"), "result": result})
        if len(self.worst) < keep_worst:
            heapq.heappush(self.worst, entry)
        elif keep_worst and entry[:2] > self.worst[0][:2]:
            heapq.heapreplace(self.worst, entry)

    @property
    def mean(self) -> float | None:
        return self.total / self.scored if self.scored else None

    @property
    def std(self) -> float | None:
        if not self.scored:
            return None
        mean = self.total / self.scored
        return math.sqrt(max(self.total_sq / self.scored - mean * mean, 0.0))


def _scale(manifest: dict | None, scorer_id: str) -> float:
    options = ((manifest or {}).get("scorers", {}).get(scorer_id, {}) or {}).get("options", {}) or {}
    scale = options.get("scale")
    return float(scale) if isinstance(scale, (int, float)) and scale > 0 else 1.0


def collect(results: str | os.PathLike, manifest: dict | None, worst: int = 10, max_errors: int = 50) -> dict:
    stats: dict[str, ScorerStats] = {}
    malformed, malformed_count, lines = [], 0, 0
    for order, line in enumerate(read_results(results)):
        lines += 1
        if "error" in line:
            malformed_count += 1
            if len(malformed) < max_errors:
                malformed.append((line.get("line"), line["error"]))
            continue
        for scorer_id, result in (line.get("results") or {}).items():
            if scorer_id not in stats:
                stats[scorer_id] = ScorerStats(scorer_id, high=_scale(manifest, scorer_id))
            stats[scorer_id].add(line, result, worst, max_errors, order)
    return {"stats": stats, "malformed": malformed, "malformed_count": malformed_count, "lines": lines}


# --- rendering ----------------------------------------------------------------------------------


def _verdict_class(value: Any) -> str:
    text = str(value).strip().lower()
    return text if text in ("yes", "no", "unsure") else ""


def _render_step(title: str, value: Any) -> str:
    if value in (None, {}, []):
        return ""
    parts = [f"<div><b>{escape(title)}</b>"]
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, list) and sub and all(isinstance(v, dict) for v in sub):
                parts.append(_verdict_table(key, sub))
            elif isinstance(sub, list) and any(isinstance(v, str) and " " in v.strip() for v in sub):
                items = "".join(f"<li>{escape(str(v))}</li>" for v in sub[:40])
                more = f"<li class=muted>... and {len(sub) - 40} more</li>" if len(sub) > 40 else ""
                parts.append(f"<div>{escape(key)} ({len(sub)}):</div><ol>{items}{more}</ol>")
            elif isinstance(sub, list):
                shown = ", ".join(escape(str(v)) for v in sub[:60]) + (" ..." if len(sub) > 60 else "")
                parts.append(f"<div>{escape(key)} ({len(sub)}): {shown or '<span class=muted>none</span>'}</div>")
            elif isinstance(sub, dict):
                parts.append(f"<div>{escape(key)}: {escape(json.dumps(sub, ensure_ascii=False))}</div>")
            else:
                parts.append(f"<div>{escape(key)}: {escape(str(sub))}</div>")
    else:
        parts.append(f"<pre>{escape(json.dumps(value, ensure_ascii=False, indent=1))}</pre>")
    parts.append("</div>")
    return "".join(parts)


def _verdict_table(key: str, entries: list[dict]) -> str:
    columns = list(dict.fromkeys(k for e in entries for k in e))
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = []
    for entry in entries[:40]:
        cells = []
        for column in columns:
            value = entry.get(column)
            css = f' class="{_verdict_class(value)}"' if column in VERDICT_KEYS and _verdict_class(value) else ""
            cells.append(f"<td{css}>{escape('' if value is None else str(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div>{escape(key)}:</div><table class="verdicts"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _render_item(entry: dict) -> str:
    result = entry["result"]
    score = result.get("score")
    shown = round(score, 4) if isinstance(score, float) else score
    parts = [f'<div class="item"><div><span class="score">score {shown}</span> '
             f'&middot; line {escape(str(entry["line"]))} &middot; id <code>{escape(str(entry["id"]))}</code></div>']
    if result.get("reason"):
        parts.append(f"<div><b>reason</b>: {escape(str(result['reason']))}</div>")
    parts.append(_render_step("preprocess", result.get("preprocessStepResult")))
    parts.append(_render_step("analyze", result.get("analyzeStepResult")))
    if result.get("context"):
        parts.append(_render_step("context", {"context": result["context"]}))
    parts.append("</div>")
    return "".join(parts)


def render(collected: dict, manifest: dict | None, title: str, source: str) -> str:
    stats: dict[str, ScorerStats] = collected["stats"]
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="muted">results: <code>{escape(source)}</code> &middot; {collected["lines"]} records &middot; '
            f'{collected["malformed_count"]} malformed</p>']

    body.append('<h2 id="summary">Summary</h2>')
    rows = [[sid, s.scored, s.not_scorable, s.mean, s.std, s.low_seen, s.high_seen,
             "higher" if sid in HIGHER_IS_WORSE else "lower"] for sid, s in stats.items()]
    body.append(table(["scorer", "scored", "not scorable", "mean", "std", "min", "max", "worse is"], rows,
                      numeric={1, 2, 3, 4, 5, 6}))

    body.append('<h2 id="histograms">Score distributions</h2><div class="plots">')
    for sid, s in stats.items():
        body.append(f'<div class="plot"><h3>{escape(sid)}</h3>'
                    f'{histogram_svg(s.counts, 0.0, s.high, f"{sid} score histogram ({s.scored} scored)")}</div>')
    body.append("</div>")

    body.append('<h2 id="worst">Worst items</h2>')
    for sid, s in stats.items():
        worst = sorted(s.worst, key=lambda e: (-e[0], -e[1]))
        body.append(f"<h3>{escape(sid)} ({'highest' if sid in HIGHER_IS_WORSE else 'lowest'} scores)</h3>")
        body.extend(_render_item(e[2]) for e in worst)
        if not worst:
            body.append('<p class="muted">no scored items</p>')

    body.append('<h2 id="not-scorable">Not scorable</h2>')
    any_errors = False
    for sid, s in stats.items():
        if s.errors:
            any_errors = True
            body.append(f"<h3>{escape(sid)} ({s.not_scorable})</h3>")
            body.append(table(["line", "id", "error", "raw reply"], [list(e) for e in s.errors]))
            if s.not_scorable > len(s.errors):
                body.append(f'<p class="muted">... and {s.not_scorable - len(s.errors)} more</p>')
    if not any_errors:
        body.append('<p class="muted">every item was scored</p>')

    body.append('<h2 id="malformed">Malformed input records</h2>')
    if collected["malformed"]:
        body.append(table(["line", "error"], [list(m) for m in collected["malformed"]]))
        if collected["malformed_count"] > len(collected["malformed"]):
            body.append(f'<p class="muted">... and {collected["malformed_count"] - len(collected["malformed"])} more</p>')
    else:
        body.append('<p class="muted">none</p>')

    body.append('<h2 id="manifest">Run manifest</h2>')
    if manifest:
        flat = flatten({k: v for k, v in manifest.items()})
        rows = [[key, json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value]
                for key, value in flat.items() if not key.startswith("judges.") or "files_sha256" not in key]
        body.append(f"<details open><summary>{len(rows)} entries</summary>{table(['key', 'value'], rows)}</details>")
    else:
        body.append('<p class="muted">no manifest found beside the results</p>')
    return page(title, "\n".join(body))


def build_report(results: str | os.PathLike, manifest: str | os.PathLike | None = None, *, worst: int = 10,
                 max_errors: int = 50, title: str | None = None) -> str:
    manifest_file = Path(manifest) if manifest else manifest_path(results)
    loaded = load_manifest(manifest_file) if manifest_file.exists() else None
    collected = collect(results, loaded, worst=worst, max_errors=max_errors)
    return render(collected, loaded, title or f"evallocal report: {Path(results).name}", str(results))


def write_report(results: str | os.PathLike, out: str | os.PathLike, **options) -> Path:
    html = build_report(results, **options)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
