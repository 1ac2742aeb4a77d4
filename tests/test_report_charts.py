"""Reports a person can read: chart specs with units on their axes and one legend entry per model, Plotly
inlined so report.html draws offline, and matrix variants published under shell-safe folder names."""

from __future__ import annotations

import json
import re
import shlex

from test_matrix import report_stages, sweep_recipe

from ortflow.engine.record import charts


def test_a_latency_objective_is_plotted_in_milliseconds_not_as_a_speedup():
    points = [{"label": "int8[per_channel=true]", "x": 8.4, "y": 0.991, "front": True, "chosen": True},
              {"label": "int8[per_channel=false]", "x": 9.1, "y": 0.97, "front": True},
              {"label": "fp32", "x": 16.0, "y": 1.0}]
    figure = charts.scatter_figure(points, "p50_ms", "cosine_mean")
    assert figure["layout"]["xaxis"]["title"]["text"] == "p50_ms (ms)"
    assert figure["layout"]["xaxis"]["ticksuffix"] == " ms" and figure["layout"]["yaxis"]["ticksuffix"] == ""
    markers = [t for t in figure["data"] if t["mode"] == "markers"]
    assert [t["name"] for t in markers] == ["int8[per_channel=true] (chosen)", "int8[per_channel=false]", "fp32"]
    assert all(" ms" in t["hovertemplate"] and "x:" not in t["hovertemplate"].split("<br>")[0] for t in markers)
    assert [t["name"] for t in figure["data"] if t["mode"] == "lines"] == ["Pareto front"]
    speed = charts.scatter_figure(points, "speedup vs reference (p50)", "accuracy margin")
    assert speed["layout"]["xaxis"]["ticksuffix"] == "x"


def test_legend_entries_are_unique_and_names_are_text_not_markup():
    figure = charts.distribution_figure({"a<b>": [1.0, 2.0], "a<b>#x": [1.0], "m": [3.0]})
    assert [t["name"] for t in figure["data"]] == ["a&lt;b&gt;", "a&lt;b&gt;#x", "m"]
    same = charts.scatter_figure([{"label": "m", "x": 1.0, "y": 1.0}, {"label": "m", "x": 2.0, "y": 0.5}], "speedup", "cosine")
    names = [t["name"] for t in same["data"]]
    assert names == ["m", "m#2"] and len(set(names)) == len(names)
    assert charts.distribution_figure({"x": [1.0]})["layout"]["xaxis"]["title"]["text"] == "latency per run (ms)"
    sweep = charts.scatter_figure([{"label": f"int8[method=minmax,per_channel={i}]", "x": 1.0 + i, "y": 0.9} for i in range(24)],
                                  "speedup", "cosine")  # a sweep: the legend goes below, the plot keeps its width
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
        assert shlex.quote(stage["folder"]) == stage["folder"], stage["folder"]  # a shell takes it as it is
        assert folder.is_dir() and (folder / ".ortflow-stage").read_text().strip() == stage["stage"]
    page = (project / "out" / "sweep" / "report.html").read_text()
    assert "cdn" not in page.lower() and "http://" not in re.sub(r"xmlns[^ ]*|http://www\.w3\.org[^\"' ]*", "", page)


def test_a_benchmark_and_accuracy_report_holds_plotly_figures(project, cli):
    from test_lock_portability import portable_recipe  # real MiniLM: INT8, timed and checked against fp32

    code, out, err = cli("run", portable_recipe(project))
    assert code == 0, out + err
    page = (project / "out" / "portable" / "report.html").read_text()
    assert page.count("<script>") >= 3 and "Plotly.newPlot('chart0'" in page and "Plotly.newPlot('chart1'" in page
    figures = [json.loads(spec) for spec in re.findall(r"var f = (\{.*?\}); Plotly", page)]
    latency = next(f for f in figures if f["data"][0]["type"] == "box")
    assert latency["layout"]["xaxis"]["title"]["text"] == "latency per run (ms)"
    assert sorted(t["name"] for t in latency["data"]) == ["int8", "model"]
    trade = next(f for f in figures if f["data"][0]["type"] == "scatter")
    assert trade["layout"]["xaxis"]["ticksuffix"] == "x" and [t["name"] for t in trade["data"]] == ["int8"]
