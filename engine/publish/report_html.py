"""Render a run's report as Markdown and as one self-contained HTML page (inline CSS, and Plotly charts
with plotly.js inlined: engine.publish.charts)."""

from __future__ import annotations

import html

from ortflow.engine.contracts.declarations import unit_of
from ortflow.engine.contracts.provenance import with_label
from ortflow.engine.contracts.types import dropped_text
from ortflow.engine.leaves.json_types import Json, number, text
from ortflow.engine.leaves.terminal_text import printable
from ortflow.engine.leaves.wording import counted
from ortflow.engine.publish import charts
from ortflow.engine.publish.figure_types import ChartPoint, Figure
from ortflow.engine.publish.headline import (
    Headline,
    Measured,
    ReportFacts,
    StageResult,
    find_headline,
    trade_off,
    trade_off_points,
)
from ortflow.engine.publish.report_types import ChartJson, ReportJson, TableJson

__all__ = ["html_report", "markdown_report", "trade_off"]
STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#202124;max-width:1200px}"
    "table{border-collapse:collapse;margin:0}.scroll{overflow-x:auto;max-width:100%;margin:1em 0}"
    "td,th{border:1px solid #dadce0;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f1f3f4}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "small{color:#5f6368;font-weight:normal}.chart{max-width:1100px;border:1px solid #dadce0}"
    ".headline{border:2px solid #3367d6;border-radius:6px;padding:.5em 1em;margin:1em 0;background:#f8faff;"
    "overflow-wrap:anywhere}.headline .answer{font-size:1.3em}.swatch{display:inline-block;width:.8em;"
    "height:.8em;border-radius:50%;margin-right:.3em}.warn{color:#b06000}"
)


def markdown_report(report: ReportJson) -> str:
    env, facts = report["environment"], ReportFacts.of(report)
    lines = [f"# {report['recipe']}", "", *_md_headline(_headline(report)), ""]
    lines += [
        f"Finished {report['finished']} on {env.get('cpu', '?')} ({env.get('isa', '?')}), "
        f"{env.get('onnxruntime', '?')}; built for {env.get('target_isa', '?')}.",
        "",
    ]
    if report.get("overrides"):
        lines += [
            f"Run with overrides: {', '.join(f'`--set {o}`' for o in report['overrides'])}.",
            "",
        ]
    lines += _md_table(*_stage_table(facts))
    for section in report.get("sections", []):
        for table in section["tables"]:
            lines += ["", f"## {table['title']} ({section['stage']})", ""]
            lines += _md_table(*_table(table))
    points = trade_off_points(facts)
    if points and facts.x is not None and facts.y is not None:
        x, y = facts.x, facts.y
        lines += ["", "## Speed and accuracy", ""]
        lines += _md_table(
            ["model", x.metric, y.metric],
            [[m, _with_unit(a, x.unit), _with_unit(b, y.unit)] for m, a, b in points],
        )
    return "\n".join(lines) + "\n"


def html_report(report: ReportJson) -> str:
    """The page leads with the answer (the headline), then the stages, then each stage's tables and charts;
    every model keeps one colour across the charts, and every table scrolls inside the page's width."""
    env, facts = report["environment"], ReportFacts.of(report)
    colors = charts.color_map(_model_names(report, facts))
    found = _headline(report)
    parts = [
        f"<h1>{_e(report['recipe'])}</h1>",
        _html_headline(found, colors) if found is not None else "",
        f"<p>Finished {_e(report['finished'])} on {_e(env.get('cpu', '?'))} ({_e(env.get('isa', '?'))}), "
        f"{_e(env.get('onnxruntime', '?'))}; built for {_e(env.get('target_isa', '?'))}.</p>",
        (
            f"<p>Run with overrides: {_e(', '.join('--set ' + o for o in report['overrides']))}.</p>"
            if report.get("overrides")
            else ""
        ),
        _html_table(*_stage_table(facts)),
    ]
    figures: list[Figure] = []
    units = report.get("units", {})
    for section in report.get("sections", []):
        for table in section["tables"]:
            parts.append(f"<h2>{_e(table['title'])} <small>({_e(section['stage'])})</small></h2>")
            parts.append(_html_table(*_table(table)))
        for chart in section["charts"]:
            figure = _figure(chart, units, colors)
            if figure is not None:
                parts.append(
                    f"<h2>{_e(chart['title'])} <small>({_e(section['stage'])})</small></h2>"
                )
                parts.append(charts.figure_html(figure, len(figures)))
                figures.append(figure)
    trade = _trade_off_figure(facts, colors)
    if trade is not None:
        parts += ["<h2>Speed and accuracy</h2>", charts.figure_html(trade, len(figures))]
        figures.append(trade)
    if figures:
        parts.insert(0, charts.plotly_script())
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(report['recipe'])} report</title><style>{STYLE}</style></head>"
        f"<body>{''.join(parts)}</body></html>\n"
    )


def _trade_off_figure(facts: ReportFacts, colors: dict[str, str]) -> Figure | None:
    """The speed-against-accuracy chart; its y axis starts at the recipe's bound on the accuracy measure."""
    points = trade_off_points(facts)
    if not points or facts.x is None or facts.y is None:
        return None
    x, y = facts.x, facts.y
    return charts.scatter_figure(
        [ChartPoint(label=m, x=a, y=b) for m, a, b in points],
        x.title,
        y.title,
        x.unit,
        y.unit,
        colors=colors,
        y_bound=y.bound,
    )


def _table(table: TableJson) -> tuple[list[str], list[list[Json]]]:
    """A section's table (its columns and rows) without the columns no row fills."""
    return _filled([text(column) for column in table["columns"]], table["rows"])


def _headline(report: ReportJson) -> Headline | None:
    """report.json's headline; a report.json written before there was one is answered from its stages."""
    if "headline" not in report:
        return find_headline(report)
    data = report["headline"]
    return Headline.from_json(data) if data is not None else None


def _measure_text(measure: Measured | None) -> str:
    return f"{measure.title} {_with_unit(measure.value, measure.unit)}" if measure else ""


def _md_headline(found: Headline | None) -> list[str]:
    if found is None:
        return []
    facts = ", ".join(t for t in (_measure_text(found.speed), _measure_text(found.accuracy)) if t)
    lines = [f"**{found.model}**: {facts}" + (f" on {found.data}" if found.accuracy else ""), ""]
    return (
        lines
        + ([f"{_refused_text(found)}", ""] if found.refused else [])
        + [
            f"File: `{found.path}`" if found.path else "File: a recipe input (not published)",
            "",
            found.how,
        ]
    )


def _refused_text(found: Headline) -> str:
    """Why the headline's model is the original: the candidates refused, each with its reason."""
    return (
        f"The original model, kept because {counted(len(found.refused), 'candidate')} refused: "
        + "; ".join(found.refused)
    )


def _html_headline(found: Headline, colors: dict[str, str]) -> str:
    """The answer first: the chosen model (in its chart colour), its speed and accuracy with the data the
    accuracy rests on (flagged when not real data), its file, and why it is the one."""
    swatch = f"<span class='swatch' style='background:{colors.get(found.model, '#5f6368')}'></span>"
    facts = [
        f"<b>{_e(_with_unit(m.value, m.unit))}</b> {_e(m.title)}"
        for m in (found.speed, found.accuracy)
        if m is not None
    ]
    data = (
        f"<p>Accuracy measured on {'' if found.verified else '<b class=warn>'}{_e(found.data)}"
        f"{'' if found.verified else '</b>'}.</p>"
        if found.accuracy is not None
        else ""
    )
    path = f"<code>{_e(found.path)}</code>" if found.path else "a recipe input (not published)"
    refused = f"<p><b class=warn>{_e(_refused_text(found))}</b></p>" if found.refused else ""
    return (
        f"<section class='headline' id='headline'><p class='answer'>{swatch}<b>{_e(found.model)}</b>"
        f"{': ' + ', '.join(facts) if facts else ''}</p>{refused}{data}<p>File: {path}</p>"
        f"<p><small>{_e(found.how)}</small></p></section>"
    )


def _model_names(report: ReportJson, facts: ReportFacts) -> list[str]:
    """Every model the charts name, in the order they first appear (the report's colour order)."""
    names: list[str] = []
    for section in report.get("sections", []):
        for chart in section["charts"]:
            names += list(chart.get("series", {})) + [p["label"] for p in chart.get("points", [])]
    return names + [m for m, _, _ in trade_off_points(facts)]


def _stage_table(facts: ReportFacts) -> tuple[list[str], list[list[Json]]]:
    """The stages: a cached stage's seconds are those of the run that built it (its run record), labelled so,
    not the 0.00 the cache hit took."""
    rows: list[list[Json]] = [
        [s.stage, s.type, s.status, _seconds(s), _result(s)] for s in facts.stages
    ]
    return ["stage", "type", "status", "seconds", "result"], rows


def _seconds(stage: StageResult) -> str:
    if stage.status == "cached" and stage.build_seconds is not None:
        return f"{stage.build_seconds:.2f} at build"
    return f"{stage.seconds:.2f}"


def _filled(columns: list[str], rows: list[list[Json]]) -> tuple[list[str], list[list[Json]]]:
    """A table without the columns no row fills (`labels agree` where the data has no labels): an empty column
    only pushes the ones that say something off the page."""
    keep = [
        i for i in range(len(columns)) if i == 0 or any(_cell(r[i]) for r in rows if i < len(r))
    ]
    return [columns[i] for i in keep], [[r[i] if i < len(r) else "" for i in keep] for r in rows]


def _figure(
    chart: ChartJson, units: dict[str, str], colors: dict[str, str] | None = None
) -> Figure | None:
    """A chart entry as a figure; axis units as the chart gives them, else as the stage types declared them
    (report.json's `units`), else none."""
    if chart.get("kind") == "distribution":
        series = {name: list(values) for name, values in chart["series"].items()}
        return charts.distribution_figure(
            series, text(chart.get("x_label", "value")), text(chart.get("x_unit", "")), colors
        )
    if chart.get("kind") == "scatter" and chart.get("points"):
        x_label, y_label = text(chart.get("x_label", "")), text(chart.get("y_label", ""))
        return charts.scatter_figure(
            [charts.chart_point(point) for point in chart["points"]],
            x_label,
            y_label,
            text(chart.get("x_unit", unit_of(x_label, units))),
            text(chart.get("y_unit", unit_of(y_label, units))),
            colors=colors,
            y_bound=number(chart.get("y_bound")),
        )
    return None


def _with_unit(value: float, unit: str) -> str:
    """A value as the terminal shows it: a speedup as `1.93x`, else four significant figures (`0.974`,
    `12.3 ms`)."""
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.4g}" if not unit else f"{value:.4g} {unit}"


def _result(stage: StageResult) -> str:
    """A stage's result cell: its summary (or error) with the label of the data its verdict rests on."""
    return dropped_text(
        stage.dropped_from, with_label(stage.summary or stage.error, stage.data_source)
    )


def _md_table(columns: list[str], rows: list[list[Json]]) -> list[str]:
    def cell(value: Json) -> str:
        return _cell(value).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in rows
    ]


def _html_table(columns: list[str], rows: list[list[Json]]) -> str:
    """A table in a box that scrolls sideways: at 800 px a wide latency table scrolls, the page does not."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='n'>{_e(_cell(v))}</td>" if _numeric(v) else f"<td>{_e(_cell(v))}</td>"
            for v in row
        )
        + "</tr>"
        for row in rows
    )
    return f"<div class='scroll'><table><tr>{head}</tr>{body}</table></div>"


def _cell(value: Json) -> str:
    """A cell as the terminal prints it (engine.cli.console_tables): floats to four significant figures."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _numeric(value: Json) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _e(value: object) -> str:
    return html.escape(
        printable(str(value))
    )  # control characters: the terminal's rule (engine.leaves.terminal_text)
