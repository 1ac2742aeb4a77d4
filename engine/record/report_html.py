"""Render a run's report as Markdown and as one self-contained HTML page (inline CSS and SVG charts)."""

from __future__ import annotations

import html
import statistics
from typing import Any

PALETTE = ["#3367d6", "#e8710a", "#188038", "#d93025", "#9334e6", "#12b5cb", "#f9ab00", "#5f6368"]


def markdown_report(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [f"# {report['recipe']}", "", f"Finished {report['finished']} on {env.get('cpu', '?')} ({env.get('isa', '?')}), "
             f"{env.get('onnxruntime', '?')}; built for {env.get('target_isa', '?')}.", ""]
    if report.get("overrides"):
        lines += [f"Run with overrides: {', '.join(f'`--set {o}`' for o in report['overrides'])}.", ""]
    lines += _md_table(["stage", "type", "status", "seconds", "result"],
                       [[s["stage"], s["type"], s["status"], f"{s['seconds']:.2f}", s["summary"] or s["error"] or ""]
                        for s in report["stages"]])
    for section in report.get("sections", []):
        for table in section.get("tables", []):
            lines += ["", f"## {table['title']} ({section['stage']})", ""]
            lines += _md_table(table["columns"], table["rows"])
    points = trade_off(report)
    if points:
        lines += ["", "## Speed and accuracy", ""]
        lines += _md_table(["model", "speedup", "cosine"], [[m, f"{x:.2f}x", f"{y:.4f}"] for m, x, y in points])
    return "\n".join(lines) + "\n"


def html_report(report: dict[str, Any]) -> str:
    parts = [f"<h1>{_e(report['recipe'])}</h1>",
             f"<p>Finished {_e(report['finished'])} on {_e(report['environment'].get('cpu', '?'))} "
             f"({_e(report['environment'].get('isa', '?'))}), {_e(report['environment'].get('onnxruntime', '?'))}; "
             f"built for {_e(report['environment'].get('target_isa', '?'))}.</p>",
             (f"<p>Run with overrides: {_e(', '.join('--set ' + o for o in report['overrides']))}.</p>"
              if report.get("overrides") else ""),
             _html_table(["stage", "type", "status", "seconds", "result"],
                         [[s["stage"], s["type"], s["status"], f"{s['seconds']:.2f}", s["summary"] or s["error"] or ""]
                          for s in report["stages"]])]
    for section in report.get("sections", []):
        for table in section.get("tables", []):
            parts.append(f"<h2>{_e(table['title'])} <small>({_e(section['stage'])})</small></h2>")
            parts.append(_html_table(table["columns"], table["rows"]))
        for chart in section.get("charts", []):
            parts.append(f"<h2>{_e(chart['title'])} <small>({_e(section['stage'])})</small></h2>")
            if chart.get("kind") == "distribution":
                parts.append(_distribution_svg(chart["series"]))
            elif chart.get("kind") == "scatter":
                parts.append(_scatter_svg(chart["points"], chart.get("x_label", ""), chart.get("y_label", "")))
    points = trade_off(report)
    if points:
        parts.append("<h2>Speed and accuracy</h2>")
        parts.append(_scatter_svg([{"label": m, "x": x, "y": y} for m, x, y in points],
                                  "speedup vs baseline (p50)", "mean cosine vs reference"))
    style = ("body{font:14px system-ui,sans-serif;margin:2em;color:#202124}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #dadce0;padding:4px 8px;text-align:left}th{background:#f1f3f4}"
             "small{color:#5f6368;font-weight:normal}svg{background:#fff;border:1px solid #dadce0}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(report['recipe'])} report</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def trade_off(report: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(model, speedup, cosine) for every model some stage timed and some stage checked."""
    speedups: dict[str, float] = {}
    cosines: dict[str, float] = {}
    for stage in report["stages"]:
        metrics = stage.get("metrics") or {}
        speedups.update({k: v for k, v in (metrics.get("speedup") or {}).items() if isinstance(v, (int, float))})
        cosines.update({k: v for k, v in (metrics.get("cosine_mean") or {}).items() if isinstance(v, (int, float))})
    return [(m, speedups[m], cosines[m]) for m in sorted(set(speedups) & set(cosines))]


def _md_table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def _html_table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _distribution_svg(series: dict[str, list[float]]) -> str:
    """One box (quartiles, median, 1st-99th percentile whiskers) per series, on a shared axis."""
    kept = {name: sorted(v) for name, v in series.items() if v}
    names, values = list(kept), list(kept.values())
    if not values:
        return ""
    high = max(_quantile(v, 0.99) for v in values) * 1.1 or 1.0
    width, row, left = 760, 34, 230
    height = row * len(names) + 40
    scale = lambda x: left + (width - left - 20) * x / high  # noqa: E731
    parts = [f"<svg width='{width}' height='{height}' xmlns='http://www.w3.org/2000/svg' font-size='12'>"]
    for i, (name, data) in enumerate(zip(names, values)):
        y = 20 + i * row
        color = PALETTE[i % len(PALETTE)]
        q1, med, q3 = (_quantile(data, q) for q in (0.25, 0.5, 0.75))
        lo, hi = _quantile(data, 0.01), _quantile(data, 0.99)
        parts.append(f"<text x='4' y='{y + 14}'>{_e(name)}</text>")
        parts.append(f"<line x1='{scale(lo):.1f}' x2='{scale(hi):.1f}' y1='{y + 10}' y2='{y + 10}' stroke='{color}'/>")
        parts.append(f"<rect x='{scale(q1):.1f}' y='{y}' width='{max(1, scale(q3) - scale(q1)):.1f}' height='20' "
                     f"fill='{color}' fill-opacity='0.3' stroke='{color}'/>")
        parts.append(f"<line x1='{scale(med):.1f}' x2='{scale(med):.1f}' y1='{y}' y2='{y + 20}' stroke='{color}' stroke-width='2'/>")
        parts.append(f"<text x='{scale(hi) + 4:.1f}' y='{y + 14}' fill='#5f6368'>{med:.2f}</text>")
    for tick in range(6):
        x = scale(high * tick / 5)
        parts.append(f"<text x='{x:.1f}' y='{height - 6}' text-anchor='middle' fill='#5f6368'>{high * tick / 5:.1f}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _scatter_svg(points: list[dict[str, Any]], x_label: str, y_label: str) -> str:
    """Numbered points with a legend beside the plot (names next to points collide when results agree).
    A point may be on the Pareto front (`front`: joined by a line) or the chosen one (`chosen`: ringed)."""
    width, pad, legend = 860, 60, 340
    height = max(360, 40 + 18 * len(points))
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    x0, x1 = min(xs + [1.0]) * 0.9, max(xs) * 1.1
    span = (max(ys) - min(ys)) or abs(max(ys)) or 1.0
    y0, y1 = min(ys) - 0.1 * span, max(ys) + 0.1 * span
    sx = lambda x: pad + (width - legend - 2 * pad) * (x - x0) / ((x1 - x0) or 1)  # noqa: E731
    sy = lambda y: height - pad - (height - 2 * pad) * (y - y0) / ((y1 - y0) or 1)  # noqa: E731
    parts = [f"<svg width='{width}' height='{height}' xmlns='http://www.w3.org/2000/svg' font-size='12'>",
             f"<text x='{(width - legend) / 2}' y='{height - 10}' text-anchor='middle'>{_e(x_label)}</text>",
             f"<line x1='{pad}' x2='{pad}' y1='{pad / 2}' y2='{height - pad}' stroke='#dadce0'/>",
             f"<line x1='{pad}' x2='{width - legend - pad}' y1='{height - pad}' y2='{height - pad}' stroke='#dadce0'/>",
             f"<text x='{pad}' y='{height - pad + 16}' text-anchor='middle' fill='#5f6368'>{x0:.2f}x</text>",
             f"<text x='{width - legend - pad}' y='{height - pad + 16}' text-anchor='middle' fill='#5f6368'>{x1:.2f}x</text>",
             f"<text x='{pad - 4}' y='{sy(y1) + 4:.1f}' text-anchor='end' fill='#5f6368'>{y1:.3g}</text>",
             f"<text x='{pad - 4}' y='{sy(y0) + 4:.1f}' text-anchor='end' fill='#5f6368'>{y0:.3g}</text>",
             f"<text x='14' y='{height / 2}' transform='rotate(-90 14 {height / 2})' text-anchor='middle'>{_e(y_label)}</text>"]
    if y0 < 0 < y1:  # the target: a margin of zero
        parts.append(f"<line x1='{pad}' x2='{width - legend - pad}' y1='{sy(0):.1f}' y2='{sy(0):.1f}' "
                     "stroke='#d93025' stroke-dasharray='4 3'/>")
    front = sorted((p for p in points if p.get("front")), key=lambda p: p["x"])
    if len(front) > 1:
        path = " ".join(f"{sx(p['x']):.1f},{sy(p['y']):.1f}" for p in front)
        parts.append(f"<polyline points='{path}' fill='none' stroke='#5f6368' stroke-dasharray='2 2'/>")
    for i, point in enumerate(points):
        color = PALETTE[i % len(PALETTE)]
        x, y = sx(point["x"]), sy(point["y"])
        if point.get("chosen"):
            parts.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='11' fill='none' stroke='#202124' stroke-width='2'/>")
        parts.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='7' fill='{color}' fill-opacity='0.8'/>")
        parts.append(f"<text x='{x:.1f}' y='{y + 4:.1f}' text-anchor='middle' fill='#fff' font-size='10'>{i + 1}</text>")
        legend_y = pad / 2 + 18 * i
        parts.append(f"<circle cx='{width - legend + 10}' cy='{legend_y - 4}' r='7' fill='{color}' fill-opacity='0.8'/>")
        parts.append(f"<text x='{width - legend + 10}' y='{legend_y}' text-anchor='middle' fill='#fff' font-size='10'>{i + 1}</text>")
        parts.append(f"<text x='{width - legend + 24}' y='{legend_y}'>{_e(point['label'])}: {point['x']:.2f}x, "
                     f"{point['y']:.4g}{' (chosen)' if point.get('chosen') else ''}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _quantile(data: list[float], q: float) -> float:
    if len(data) == 1:
        return data[0]
    return statistics.quantiles(data, n=1000, method="inclusive")[max(0, min(998, int(q * 1000) - 1))]


def _e(value: Any) -> str:
    return html.escape(str(value))
