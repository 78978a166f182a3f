"""The HTML shell and inline SVG of `evallocal report` (no scripts, fonts or images from anywhere)."""

from __future__ import annotations

from html import escape

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px auto; max-width: 1100px;
       color: #1d2330; background: #fff; line-height: 1.4; padding: 0 16px; }
h1 { font-size: 1.6em; margin-bottom: 4px; } h2 { margin-top: 32px; border-bottom: 2px solid #e3e6ec; padding-bottom: 4px; }
h3 { margin: 18px 0 6px; }
.muted { color: #667085; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }
th, td { border: 1px solid #d8dce3; padding: 4px 8px; text-align: left; vertical-align: top; max-width: 640px; overflow-wrap: anywhere; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.plot { border: 1px solid #e3e6ec; border-radius: 6px; padding: 8px; }
.plot h3 { margin: 0 0 4px; font-size: 1em; }
.item { border: 1px solid #e3e6ec; border-left: 4px solid #d9534f; border-radius: 4px; padding: 8px 12px; margin: 10px 0; }
.item .score { font-weight: 600; }
.yes { color: #b42318; font-weight: 600; } .no { color: #067647; font-weight: 600; } .unsure { color: #b54708; font-weight: 600; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; word-break: break-word; }
code { font-size: 0.9em; }
.error { color: #b42318; }
details summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
.item ol { margin: 2px 0 6px; padding-left: 28px; }
"""


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n')


def histogram_svg(counts: list[int], low: float, high: float, label: str, width: int = 340, height: int = 170) -> str:
    """Bars of `counts` over [low, high], with axis ticks and the count on the tallest bar."""
    left, bottom, top, right = 34, 26, 12, 8
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts) or 1
    bar_w = plot_w / max(len(counts), 1)
    parts = [f'<svg role="img" aria-label="{escape(label)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" class="histogram">',
             f'<title>{escape(label)}</title>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#667085"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#667085"/>']
    for i, count in enumerate(counts):
        h = plot_h * count / peak
        x = left + i * bar_w
        start = low + (high - low) * i / len(counts)
        end = low + (high - low) * (i + 1) / len(counts)
        parts.append(f'<rect x="{x + 0.5:.1f}" y="{top + plot_h - h:.1f}" width="{max(bar_w - 1, 1):.1f}" '
                     f'height="{h:.1f}" fill="#4e79a7"><title>{start:.2f}-{end:.2f}: {count}</title></rect>')
    for frac in (0, 0.5, 1):
        x = left + plot_w * frac
        value = low + (high - low) * frac
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="middle" fill="#344054">'
                     f'{value:g}</text>')
    parts.append(f'<text x="{left - 4}" y="{top + 9}" font-size="11" text-anchor="end" fill="#344054">{peak}</text>')
    parts.append(f'<text x="{left - 4}" y="{top + plot_h}" font-size="11" text-anchor="end" fill="#344054">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def table(headers: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            text = "-" if cell is None else (f"{cell:.4f}" if isinstance(cell, float) else str(cell))
            cells.append(f'<td class="num">{escape(text)}</td>' if i in numeric else f"<td>{escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
