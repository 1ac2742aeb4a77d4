"""Reports a person can read: chart specs with units on their axes and one legend entry per model, Plotly
inlined so report.html draws offline, and matrix variants published under shell-safe folder names."""

from __future__ import annotations

import json
import re
import shlex

from test_matrix import report_stages, sweep_recipe

from ortflow.api import ArtifactKind, Axis, Better, Declares, Measure, Port, Stage, Tables
from ortflow.engine.declarations import units
from ortflow.engine.publish import charts, report, report_html
from ortflow.engine.registry import stage_type


def _declared_units(*types: str) -> dict[str, str]:
    return units(stage_type(t).declares for t in types)


def test_a_latency_objective_is_plotted_in_milliseconds_not_as_a_speedup():
    points = [
        {"label": "int8[per_channel=true]", "x": 8.4, "y": 0.991, "front": True, "chosen": True},
        {"label": "int8[per_channel=false]", "x": 9.1, "y": 0.97, "front": True},
        {"label": "fp32", "x": 16.0, "y": 1.0},
    ]
    known = _declared_units("select", "validate_accuracy")  # the units select's measures declare
    figure = report_html._figure(
        {"kind": "scatter", "points": points, "x_label": "p50_ms", "y_label": "cosine_mean"}, known
    )
    assert figure["layout"]["xaxis"]["title"]["text"] == "p50_ms (ms)"
    assert (
        figure["layout"]["xaxis"]["ticksuffix"] == " ms"
        and figure["layout"]["yaxis"]["ticksuffix"] == ""
    )
    markers = [t for t in figure["data"] if t["mode"] == "markers"]
    assert [t["name"] for t in markers] == [
        "int8[per_channel=true] (chosen)",
        "int8[per_channel=false]",
        "fp32",
    ]
    assert all(
        " ms" in t["hovertemplate"] and "x:" not in t["hovertemplate"].split("<br>")[0]
        for t in markers
    )
    assert [t["name"] for t in figure["data"] if t["mode"] == "lines"] == ["Pareto front"]
    speed = report_html._figure(
        {
            "kind": "scatter",
            "points": points,
            "x_label": "speedup vs reference (p50)",
            "y_label": "accuracy margin",
        },
        known,
    )
    assert speed["layout"]["xaxis"]["ticksuffix"] == "x"
    assert (
        report_html._figure(
            {"kind": "scatter", "points": points, "x_label": "p50_ms", "y_label": "y"}, {}
        )["layout"]["xaxis"]["ticksuffix"]
        == ""
    )  # no stage type declared it: no unit guessed from the name


class _Translate(Stage):
    """A plugin stage that reports per-model measures the engine has never heard of, and a long table."""

    type = "translate_eval"
    outputs = (Port("scores", ArtifactKind.METRICS, "scores", filename="scores.json"),)
    declares = Declares(
        measures=(
            Measure(
                "tokens_per_s", Better.HIGHER, "/s", plot=Axis.SPEED, title="tokens per second"
            ),
            Measure("bleu", Better.HIGHER, plot=Axis.ACCURACY),
        ),
        tables=(Tables("Per-sentence scores", terminal=False),),
    )


def test_what_a_report_plots_and_prints_comes_from_what_stage_types_declare(tmp_path, capsys):
    """The engine knew benchmark and validate_accuracy by their metrics' names (it plotted only `speedup` against
    `cosine_mean`, and skipped tables titled `Top operators` in the terminal). A plugin's declarations now do the
    same for its own measures and tables, and the built-ins go through the same declarations."""
    from ortflow.engine.console import Output

    section = report._annotated(
        report._well_formed(
            {
                "tables": [
                    {"title": "Scores", "columns": ["model", "bleu"], "rows": [["int8", 31.2]]},
                    {
                        "title": "Per-sentence scores: int8",
                        "columns": ["sentence", "bleu"],
                        "rows": [["s1", 30.0]],
                    },
                ]
            }
        ),
        _Translate.declares,
    )
    assert [t.get("terminal", True) for t in section["tables"]] == [True, False]
    stages = [
        {
            "stage": "eval",
            "type": "translate_eval",
            "status": "ran",
            "seconds": 1.0,
            "summary": "",
            "error": None,
            "metrics": {
                "tokens_per_s": {"int8": 410.0, "model": 200.0},
                "bleu": {"int8": 31.2, "model": 32.0},
            },
        }
    ]
    doc = {
        "recipe": "mt",
        "finished": "now",
        "environment": {},
        "stages": stages,
        "sections": [{"stage": "eval", **section}],
        **report._declared([stage_type("concat").declares, _Translate.declares]),
    }
    assert report_html.trade_off(doc) == [("int8", 410.0, 31.2), ("model", 200.0, 32.0)]
    assert "| model | tokens_per_s | bleu |" in report_html.markdown_report(doc)
    Output().report_sections(doc["sections"])
    printed = capsys.readouterr().out
    assert "Scores" in printed and "Per-sentence" not in printed
    built_in = report._declared(
        [stage_type(t).declares for t in ("benchmark", "validate_accuracy")]
    )
    assert (built_in["trade_off"]["x"]["metric"], built_in["trade_off"]["y"]["metric"]) == (
        "speedup",
        "cosine_mean",
    )
    assert not stage_type("benchmark").declares.shown_in_terminal("Top operators: int8")


def test_legend_entries_are_unique_and_names_are_text_not_markup():
    figure = charts.distribution_figure(
        {"a<b>": [1.0, 2.0], "a<b>#x": [1.0], "m": [3.0]}, "latency per run", "ms"
    )
    assert [t["name"] for t in figure["data"]] == ["a&lt;b&gt;", "a&lt;b&gt;#x", "m"]
    same = charts.scatter_figure(
        [{"label": "m", "x": 1.0, "y": 1.0}, {"label": "m", "x": 2.0, "y": 0.5}],
        "speedup",
        "cosine",
    )
    names = [t["name"] for t in same["data"]]
    assert names == ["m", "m#2"] and len(set(names)) == len(names)
    assert (
        charts.distribution_figure({"x": [1.0]}, "latency per run", "ms")["layout"]["xaxis"][
            "title"
        ]["text"]
        == "latency per run (ms)"
    )
    sweep = charts.scatter_figure(
        [
            {"label": f"int8[method=minmax,per_channel={i}]", "x": 1.0 + i, "y": 0.9}
            for i in range(24)
        ],
        "speedup",
        "cosine",
    )  # a sweep: the legend goes below, the plot keeps its width
    assert sweep["layout"]["legend"]["orientation"] == "h" and sweep["layout"]["height"] > 900
    shapes = {(t["marker"]["color"], t["marker"]["symbol"]) for t in sweep["data"]}
    assert len(shapes) == 24  # no two variants drawn alike


def test_report_html_draws_offline_and_matrix_folders_need_no_quoting(project, cli):
    path = sweep_recipe(project, "{text: ['a b', \"c'd\", '[x]'], stamp: [false]}")
    code, out, err = cli("run", path)
    assert code == 0, out + err
    stages = report_stages(project)
    variants = [s for s in stages.values() if s["stage"].startswith("base[")]
    assert len(variants) == 3 and len({s["folder"] for s in variants}) == 3
    for stage in variants:
        folder = project / "out" / "sweep" / stage["folder"]
        assert shlex.quote(stage["folder"]) == stage["folder"], stage[
            "folder"
        ]  # a shell takes it as it is
        assert folder.is_dir() and (folder / ".ortflow-stage").read_text().strip() == stage["stage"]
    page = (project / "out" / "sweep" / "report.html").read_text()
    assert "cdn" not in page.lower() and "http://" not in re.sub(
        r"xmlns[^ ]*|http://www\.w3\.org[^\"' ]*", "", page
    )


def test_a_benchmark_and_accuracy_report_holds_plotly_figures(project, cli):
    from test_lock_portability import (
        portable_recipe,
    )  # real MiniLM: INT8, timed and checked against fp32

    code, out, err = cli("run", portable_recipe(project))
    assert code == 0, out + err
    page = (project / "out" / "portable" / "report.html").read_text()
    assert (
        page.count("<script>") >= 3
        and "Plotly.newPlot('chart0'" in page
        and "Plotly.newPlot('chart1'" in page
    )
    figures = [json.loads(spec) for spec in re.findall(r"var f = (\{.*?\}); Plotly", page)]
    latency = next(f for f in figures if f["data"][0]["type"] == "box")
    assert latency["layout"]["xaxis"]["title"]["text"] == "latency per run (ms)"
    assert sorted(t["name"] for t in latency["data"]) == ["int8", "model"]
    trade = next(f for f in figures if f["data"][0]["type"] == "scatter")
    assert trade["layout"]["xaxis"]["ticksuffix"] == "x" and [t["name"] for t in trade["data"]] == [
        "int8"
    ]
