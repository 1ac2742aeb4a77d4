"""Render a run's report as Markdown and as one self-contained HTML page (inline CSS, and Plotly charts
with plotly.js inlined: engine.publish.charts)."""

from __future__ import annotations

import html
from typing import Any

from ortflow.engine.declarations import unit_of
from ortflow.engine.json_types import JsonObject
from ortflow.engine.provenance import with_label
from ortflow.engine.publish import charts
from ortflow.engine.types import dropped_text


def markdown_report(report: JsonObject) -> str:
    env = report["environment"]
    lines = [
        f"# {report['recipe']}",
        "",
        f"Finished {report['finished']} on {env.get('cpu', '?')} ({env.get('isa', '?')}), "
        f"{env.get('onnxruntime', '?')}; built for {env.get('target_isa', '?')}.",
        "",
    ]
    if report.get("overrides"):
        lines += [
            f"Run with overrides: {', '.join(f'`--set {o}`' for o in report['overrides'])}.",
            "",
        ]
    lines += _md_table(
        ["stage", "type", "status", "seconds", "result"],
        [
            [s["stage"], s["type"], s["status"], f"{s['seconds']:.2f}", _result(s)]
            for s in report["stages"]
        ],
    )
    for section in report.get("sections", []):
        for table in section.get("tables", []):
            lines += ["", f"## {table['title']} ({section['stage']})", ""]
            lines += _md_table(table["columns"], table["rows"])
    points = trade_off(report)
    if points:
        x, y = report["trade_off"]["x"], report["trade_off"]["y"]
        lines += ["", "## Speed and accuracy", ""]
        lines += _md_table(
            ["model", x["metric"], y["metric"]],
            [[m, _with_unit(a, x["unit"]), _with_unit(b, y["unit"])] for m, a, b in points],
        )
    return "\n".join(lines) + "\n"


def html_report(report: JsonObject) -> str:
    parts = [
        f"<h1>{_e(report['recipe'])}</h1>",
        f"<p>Finished {_e(report['finished'])} on {_e(report['environment'].get('cpu', '?'))} "
        f"({_e(report['environment'].get('isa', '?'))}), {_e(report['environment'].get('onnxruntime', '?'))}; "
        f"built for {_e(report['environment'].get('target_isa', '?'))}.</p>",
        (
            f"<p>Run with overrides: {_e(', '.join('--set ' + o for o in report['overrides']))}.</p>"
            if report.get("overrides")
            else ""
        ),
        _html_table(
            ["stage", "type", "status", "seconds", "result"],
            [
                [s["stage"], s["type"], s["status"], f"{s['seconds']:.2f}", _result(s)]
                for s in report["stages"]
            ],
        ),
    ]
    figures = []
    for section in report.get("sections", []):
        for table in section.get("tables", []):
            parts.append(f"<h2>{_e(table['title'])} <small>({_e(section['stage'])})</small></h2>")
            parts.append(_html_table(table["columns"], table["rows"]))
        for chart in section.get("charts", []):
            figure = _figure(chart, report.get("units") or {})
            if figure is not None:
                parts.append(
                    f"<h2>{_e(chart['title'])} <small>({_e(section['stage'])})</small></h2>"
                )
                parts.append(charts.figure_html(figure, len(figures)))
                figures.append(figure)
    points = trade_off(report)
    if points:
        x, y = report["trade_off"]["x"], report["trade_off"]["y"]
        parts.append("<h2>Speed and accuracy</h2>")
        figure = charts.scatter_figure(
            [{"label": m, "x": a, "y": b} for m, a, b in points],
            x["title"],
            y["title"],
            x["unit"],
            y["unit"],
        )
        parts.append(charts.figure_html(figure, len(figures)))
        figures.append(figure)
    if figures:
        parts.insert(0, charts.plotly_script())
    style = (
        "body{font:14px system-ui,sans-serif;margin:2em;color:#202124}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #dadce0;padding:4px 8px;text-align:left}th{background:#f1f3f4}"
        "small{color:#5f6368;font-weight:normal}.chart{max-width:1100px;border:1px solid #dadce0}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(report['recipe'])} report</title>"
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n"
    )


def _figure(chart: JsonObject, units: dict[str, str]) -> JsonObject | None:
    """A chart entry as a figure; axis units as the chart gives them, else as the stage types declared them
    (report.json's `units`), else none."""
    if chart.get("kind") == "distribution":
        return charts.distribution_figure(
            chart["series"], chart.get("x_label", "value"), chart.get("x_unit", "")
        )
    if chart.get("kind") == "scatter" and chart.get("points"):
        x_label, y_label = chart.get("x_label", ""), chart.get("y_label", "")
        return charts.scatter_figure(
            chart["points"],
            x_label,
            y_label,
            chart.get("x_unit", unit_of(x_label, units)),
            chart.get("y_unit", unit_of(y_label, units)),
        )
    return None


def trade_off(report: JsonObject) -> list[tuple[str, float, float]]:
    """(model, x, y) for every model with both of the measures the stage types declared for the speed-against-
    accuracy chart (report.json's `trade_off`: e.g. a benchmark's speedup and a validate_accuracy's mean cosine)."""
    axes = report.get("trade_off")
    if not axes:
        return []
    found: dict[str, dict[str, float]] = {"x": {}, "y": {}}
    for stage in report["stages"]:
        metrics = stage.get("metrics") or {}
        for side, values in found.items():
            per_model = metrics.get(axes[side]["metric"])
            if isinstance(per_model, dict):
                values.update({k: v for k, v in per_model.items() if isinstance(v, (int, float))})
    return [(m, found["x"][m], found["y"][m]) for m in sorted(set(found["x"]) & set(found["y"]))]


def _with_unit(value: float, unit: str) -> str:
    """A value as the Markdown table shows it: a ratio to four places, a speedup as `1.93x`, else `12.3 ms`."""
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.4f}" if not unit else f"{value:.4g} {unit}"


def _result(stage: JsonObject) -> str:
    """A stage's result cell: its summary (or error) with the label of the data its verdict rests on."""
    return dropped_text(
        stage.get("dropped_from") or (),
        with_label(stage["summary"] or stage["error"] or "", stage.get("data_source")),
    )


def _md_table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in rows
    ]


def _html_table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _e(value: Any) -> str:
    return html.escape(str(value))
