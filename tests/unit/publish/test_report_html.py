"""engine.publish.report_html, charts and headline on hand-written report.json data (no stage runs): the answer
a report leads with, one colour per model, axes that do not turn a 0.0002 difference into a cliff, and tables
without empty columns or unrounded numbers. tests/test_report_charts.py checks the same on a real run."""

from __future__ import annotations

from ortflow.engine.publish import charts, report_html
from ortflow.engine.publish.headline import ReportFacts, find_headline

RANDOM = {
    "provenance": "random",
    "loader": "random",
    "verified": False,
    "label": "unverified: random feeds",
}
AXES = {
    "x": {
        "metric": "speedup",
        "title": "speedup vs baseline (p50)",
        "unit": "x",
        "better": "higher",
    },
    "y": {
        "metric": "cosine_mean",
        "title": "mean cosine vs reference",
        "unit": "",
        "better": "higher",
    },
}


def _stage(name: str, type_: str, metrics: dict, **more) -> dict:
    entry = {"stage": name, "type": type_, "status": "ran", "seconds": 1.0, "build_seconds": 1.0}
    return {**entry, "summary": "", "error": None, "metrics": metrics, "outputs": {}, **more}


def _report(*stages: dict) -> dict:
    return {
        "recipe": "r",
        "finished": "now",
        "environment": {},
        "stages": list(stages),
        "trade_off": AXES,
    }


def test_a_stage_s_choice_leads_and_random_feeds_are_flagged():
    speed = _stage("speed", "benchmark", {"speedup": {"model": 1.0, "a": 1.9, "b": 2.5}})
    accuracy = _stage(
        "accuracy",
        "validate_accuracy",
        {"cosine_mean": {"a": 0.999, "b": 0.95}},
        data_source=RANDOM,
    )
    pick = _stage(
        "pick",
        "select",
        {"chosen": "a", "chosen_speedup": 1.9},
        outputs={"model": {"path": "out/r/pick/model.onnx", "digest": "d", "size": 1}},
    )
    chosen = find_headline(_report(speed, accuracy, pick))
    assert (chosen.model, chosen.path, chosen.verified) == ("a", "out/r/pick/model.onnx", False)
    assert (chosen.speed.value, chosen.accuracy.value) == (
        1.9,
        0.999,
    ) and "pick (select)" in chosen.how
    unchosen = find_headline(
        _report(speed, accuracy)
    )  # no chooser: the fastest measured for accuracy
    assert unchosen.model == "b" and unchosen.path == "" and "highest speedup" in unchosen.how
    page = report_html.html_report({**_report(speed, accuracy, pick), "headline": chosen.to_json()})
    assert "<b class=warn>unverified: random feeds</b>" in page and page.index(
        "headline"
    ) < page.index("<table")
    assert find_headline(_report(_stage("fused", "transformer_fusion", {}))) is None


def test_one_colour_per_model_across_charts():
    colors = charts.color_map(["model", "int8", "fp16", "int8"])
    boxes = charts.distribution_figure({"model": [1.0], "int8": [2.0]}, "latency", "ms", colors)
    points = charts.scatter_figure(
        [{"label": "int8", "x": 2.0, "y": 0.9}], "speedup", "cosine", colors=colors
    )
    assert (
        boxes["data"][1]["marker"]["color"]
        == points["data"][0]["marker"]["color"]
        == colors["int8"]
    )
    assert len(set(colors.values())) == 3


def test_an_accuracy_axis_starts_at_the_bound_or_states_its_window():
    close = [{"label": "a", "x": 1.0, "y": 0.99984}, {"label": "b", "x": 2.0, "y": 1.0}]
    bounded = charts.scatter_figure(close, "speedup", "cosine", y_bound=0.99)["layout"]["yaxis"]
    assert bounded["range"][0] == 0.99 and "from the bound 0.99" in bounded["title"]["text"]
    window = charts.scatter_figure(close, "speedup", "cosine")["layout"]["yaxis"]
    assert (
        "not from 0" in window["title"]["text"]
        and window["range"][0] < 0.99984 < 1.0 < window["range"][1]
    )
    wide = charts.scatter_figure(
        [{"label": "a", "x": 1.0, "y": 0.2}, {"label": "b", "x": 2, "y": 0.9}], "s", "c"
    )
    assert "range" not in wide["layout"]["yaxis"]


def test_tables_hold_rounded_numbers_no_empty_columns_and_build_times():
    columns, rows = report_html._filled(
        ["model", "cosine", "labels agree", "why"], [["a", 0.00949973, "", ""]]
    )
    assert (
        columns == ["model", "cosine"]
        and report_html._html_table(columns, rows).count("0.0095") == 1
    )
    cached = _stage("speed", "benchmark", {}, status="cached", seconds=0.0, build_seconds=46.518)
    assert report_html._stage_table(ReportFacts.of(_report(cached)))[1][0][3] == "46.52 at build"
