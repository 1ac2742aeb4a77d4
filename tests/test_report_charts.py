"""Reports a person can read: chart specs with units on their axes and one legend entry per model, Plotly
inlined so report.html draws offline, and matrix variants published under shell-safe folder names."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from test_matrix import report_stages, sweep_recipe

from ortflow.api import ArtifactKind, Axis, Better, Declares, Measure, Port, Stage, Tables
from ortflow.engine.contracts.declarations import units
from ortflow.engine.contracts.registry import stage_type
from ortflow.engine.leaves.json_types import JsonObject
from ortflow.engine.publish import charts, report, report_html


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
    from ortflow.engine.cli.console import Output

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


@pytest.fixture(scope="module")
def minilm_report(tmp_path_factory) -> tuple[Path, JsonObject]:
    """The real MiniLM recipe (INT8, timed and checked against fp32) run twice: built, then every stage cached.
    Returns the out folder (the cached run's report) and the first run's report.json."""
    from conftest import main
    from test_lock_portability import portable_recipe

    project = tmp_path_factory.mktemp("minilm_report")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        patch.delenv("ORTFLOW_CACHE", raising=False)
        recipe = portable_recipe(project)
        assert main(["run", str(recipe)]) == 0
        first = json.loads((project / "out" / "portable" / "report.json").read_text())
        (project / "out" / "portable" / "report.html").rename(project / "built.html")
        assert main(["run", str(recipe)]) == 0
    return project / "out" / "portable", first


def _figures(page: str) -> list[JsonObject]:
    return [json.loads(spec) for spec in re.findall(r"var f = (\{.*?\}); Plotly", page)]


def test_a_benchmark_and_accuracy_report_holds_plotly_figures(minilm_report):
    out, _ = minilm_report
    page = (out.parent.parent / "built.html").read_text()
    assert (
        page.count("<script>") >= 3
        and "Plotly.newPlot('chart0'" in page
        and "Plotly.newPlot('chart1'" in page
    )
    figures = _figures(page)
    latency = next(f for f in figures if f["data"][0]["type"] == "box")
    assert latency["layout"]["xaxis"]["title"]["text"] == "latency per run (ms)"
    assert sorted(t["name"] for t in latency["data"]) == ["int8", "model"]
    trade = next(f for f in figures if f["data"][0]["type"] == "scatter")
    assert trade["layout"]["xaxis"]["ticksuffix"] == "x" and [t["name"] for t in trade["data"]] == [
        "int8"
    ]


def test_the_report_leads_with_the_answer_and_keeps_build_times(minilm_report):
    """Issue 31: report.html opens on the answer (chosen model, speedup, accuracy on which data, its file); a
    model keeps its colour in every chart; the accuracy axis starts at the recipe's gate (min cosine 0.5), not
    at the closest point; numbers read as in the terminal; no column nothing fills; and a cached re-run shows
    each stage's build time from the run that built it, labelled so, instead of `cached 0.00`."""
    out, first = minilm_report
    cached = json.loads((out / "report.json").read_text())
    headline = cached["headline"]
    assert headline["model"] == "int8" and headline["verified"] is True
    assert headline["data"].startswith("real data: npz loader") and Path(headline["path"]).is_file()
    timed = json.loads((out / "speed" / "benchmark.json").read_text())["results"]
    p50 = {r["model"]: r["latency_ms"]["p50"] for r in timed}
    # the headline's speedup is the int8 model's against the float model it came from, the ratio of their timed
    # medians (benchmark.json's rows; written to 3 decimals). Which way the ratio goes on a busy 2-core machine is
    # not this test's business (one CI run timed int8 at 0.99x): the value must be that ratio, and not the
    # baseline's own 1.0 wherever the two medians differ by more than rounding (the medians and the ratio
    # are each written to 3 decimals) can hide
    ratio = p50["model"] / p50["int8"]
    assert headline["speed"]["value"] == pytest.approx(ratio, abs=1.5e-3), p50
    if abs(ratio - 1) > 4e-3:
        assert headline["speed"]["value"] != pytest.approx(1.0, abs=1.5e-3), p50
    page = (out / "report.html").read_text()
    assert page.index("id='headline'") < page.index("<table")
    answer = re.search(r"<section class='headline'.*?</section>", page).group(0)
    assert f"{headline['speed']['value']:.2f}x" in answer and headline["path"] in answer
    latency, trade = (
        next(f for f in _figures(page) if f["data"][0]["type"] == t) for t in ("box", "scatter")
    )
    color = {t["name"]: t["marker"]["color"] for t in latency["data"] + trade["data"]}
    assert next(t for t in trade["data"] if t["name"] == "int8")["marker"]["color"] == color["int8"]
    assert len({color["int8"], color["model"]}) == 2
    assert trade["layout"]["yaxis"]["range"][0] == 0.5  # the gate, min cosine_mean 0.5
    decimals = re.findall(r"<td class='n'>-?(\d*\.\d+)(?:e-?\d+)?</td>", page)
    assert decimals and all(len(d.replace(".", "").lstrip("0")) <= 4 for d in decimals), decimals
    assert "<th>labels agree</th>" not in page
    for stage in cached["stages"]:
        built = next(s for s in first["stages"] if s["stage"] == stage["stage"])
        assert stage["status"] == "cached" and stage["build_seconds"] == built["build_seconds"] > 0
        assert f"<td>{stage['build_seconds']:.2f} at build</td>" in page


def test_the_report_fits_a_browser_window_at_1400_and_800_px(minilm_report):
    """A real headless browser (.ci/run installs Debian's chromium): at both widths the page is no wider than
    the window (wide tables scroll inside it), the headline is fully on the first screen and every chart drew,
    from the plotly.js inlined in the page (nothing is fetched)."""
    from report_browser import browser, layout

    if browser() is None:
        pytest.skip("no chromium on PATH (.ci/run installs it with apt-get install -y chromium)")
    out, _ = minilm_report
    for width in (1400, 800):
        seen = layout(out / "report.html", width)
        assert seen.inner_width == width and seen.scroll_width <= seen.inner_width, seen
        assert seen.headline is not None and seen.headline[2] <= width, seen
        assert 0 <= seen.headline[1] and seen.headline[3] <= seen.inner_height, seen
        assert seen.plotly == "object" and seen.drawn == seen.charts >= 2, seen


def _keys_declared(value: JsonObject, form: type, where: str) -> list[str]:
    """What a written JSON object holds against the TypedDict that declares its form: keys the type does not
    name, and required keys missing."""
    declared = form.__required_keys__ | form.__optional_keys__  # type: ignore[attr-defined]
    extra = sorted(set(value) - declared)
    missing = sorted(form.__required_keys__ - set(value))  # type: ignore[attr-defined]
    return [f"{where}: undeclared {extra}" for _ in extra[:1]] + [
        f"{where}: missing {missing}" for _ in missing[:1]
    ]


def test_report_json_has_the_form_its_types_declare(minilm_report):
    """Issue 43: the renderers and the headline read report.json through engine.publish.report_types, not as
    JSON objects of anything; a real run's report.json (a first run and its cached re-run) holds exactly the
    keys those types declare, so a key added to the file without its type (or the other way round) fails."""
    from ortflow.engine.publish import report_types as form

    out, first = minilm_report
    for doc in (first, json.loads((out / "report.json").read_text())):
        found = _keys_declared(doc, form.ReportJson, "report")
        for entry in doc["stages"]:
            found += _keys_declared(entry, form.StageEntry, entry["stage"])
            for port, published in entry["outputs"].items():
                found += _keys_declared(published, form.OutputJson, f"{entry['stage']}.{port}")
        for section in doc["sections"]:
            found += _keys_declared(section, form.SectionJson, f"section {section['stage']}")
            for table in section["tables"]:
                found += _keys_declared(table, form.TableJson, table["title"])
            for chart in section["charts"]:
                found += _keys_declared(chart, form.ChartJson, chart["title"])
        for side in ("x", "y"):
            found += _keys_declared(doc["trade_off"][side], form.AxisJson, f"trade_off.{side}")
        found += _keys_declared(doc["headline"], form.HeadlineJson, "headline")
        found += _keys_declared(doc["headline"]["speed"], form.MeasuredJson, "headline.speed")
        assert not found, found
        assert doc["sections"] and doc["headline"]["accuracy"] is not None  # every part was checked
