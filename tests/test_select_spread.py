"""select (and `engine optimize`, which reads its choice) delivers a model over the original only if it was
faster in every round of the benchmark (issue 42): a candidate whose median is a little lower but whose
rounds range across 1x is noise, and the original is kept, saying so."""

from __future__ import annotations

import statistics
from pathlib import Path

from ortflow.engine.contracts.benchmark_results import (
    BenchmarkResults,
    BenchmarkRow,
    Latency,
    MachineLoad,
)
from ortflow.engine.contracts.documents import Bounds
from ortflow.engine.contracts.documents import read as read_document
from ortflow.engine.contracts.documents import write as write_document
from ortflow.engine.starter.optimize import ChoiceFiles, closing_line, read_choice
from ortflow.stages.search.selection import selection_document
from ortflow.stages.select import choose

PARAMS = Bounds()  # no constraints


def _row(model: str, rounds: list[list[float]]) -> BenchmarkRow:
    """A row as the benchmark stage writes it: every run's latency in round order, and each round's median."""
    runs = [t for r in rounds for t in r]
    middle = statistics.median(runs)
    return BenchmarkRow(
        model=model,
        intra_op_threads=0,
        batch_size=1,
        providers_used=["CPUExecutionProvider"],
        session_create_s=0.01,
        peak_rss_mb=None,
        size_mb=1.0,
        latencies_ms=runs,
        latency_ms=Latency(statistics.mean(runs), min(runs), max(runs), middle, *[max(runs)] * 3),
        throughput_per_s=1000 / statistics.mean(runs),
        runs=len(runs),
        speedup=1.0,
        round_p50_ms=tuple(statistics.median(r) for r in rounds),
    )


def _benchmark(tmp_path: Path, rows: list[BenchmarkRow]) -> BenchmarkResults:
    """Through benchmark.json and its schema, as select reads it."""
    base = rows[0]
    rows = [
        BenchmarkRow(**{**r.__dict__, "speedup": base.latency_ms.p50 / r.latency_ms.p50})
        for r in rows
    ]
    load = MachineLoad(cpus=2, load_1min=None, others_percent=None, steal_percent=None)
    document = BenchmarkResults(base.model, "", load, {}, rows, {}, {})
    write_document(tmp_path / "benchmark.json", document)
    return read_document(tmp_path / "benchmark.json", BenchmarkResults)


ORIGINAL = [[10.0, 10.2, 9.9], [10.1, 10.0, 10.3], [9.8, 10.0, 10.1]]
# a lower median over all runs (9.75 ms against 10.0 ms) but slower than the original in the third round
WITHIN_NOISE = [[9.5, 9.4, 9.6], [9.7, 9.8, 9.6], [10.4, 10.6, 10.5]]
# faster in every round
FASTER = [[8.0, 8.1, 7.9], [8.2, 8.0, 8.1], [9.5, 9.4, 9.6]]


def test_a_candidate_within_the_spread_is_not_chosen_over_the_original(tmp_path):
    benchmark = _benchmark(tmp_path, [_row("model", ORIGINAL), _row("int8", WITHIN_NOISE)])
    assert benchmark.results[1].round_p50_ms == (9.5, 9.7, 10.5)  # kept through the schema
    assert benchmark.results[1].latency_ms.p50 < benchmark.results[0].latency_ms.p50
    outcome = choose(
        ["model", "int8"], benchmark, None, [None, None], ("minimize", "p50_ms"), PARAMS
    )
    original, int8 = outcome.candidates
    assert outcome.chosen is original
    assert int8.values["speedup_low"] < 1 < int8.values["speedup_high"]
    assert "speedup_low" not in original.values
    ratios = [o / c for o, c in zip((10.0, 10.1, 10.0), (9.5, 9.7, 10.5))]  # each round's medians
    low, high = min(ratios), max(ratios)
    assert int8.misses == [
        f"not faster than model beyond the benchmark's spread: {low:.3g}-{high:.3g}x over its rounds "
        "(faster in every round needed)"
    ]
    # engine optimize: the original, with the candidate's speed and its spread; not "nothing qualified"
    document = tmp_path / "selection.json"
    for c in outcome.candidates:
        c.values["cosine_mean"] = 1.0
    write_document(document, selection_document(outcome, ["model", "int8"]))
    choice = read_choice(ChoiceFiles(document, tmp_path / "model.onnx"), "cosine_mean", 0.99)
    assert choice.chosen == "model"
    line = closing_line(choice, tmp_path / "out.onnx", [])
    assert "no optimized candidate was faster" in line
    assert f"(0.95-{high:.2f}x over rounds), cosine_mean 1.0000 (not faster in every round" in line


def test_a_candidate_faster_in_every_round_is_chosen(tmp_path):
    rows = [_row("model", ORIGINAL), _row("int8", WITHIN_NOISE), _row("int8_b", FASTER)]
    outcome = choose(
        ["model", "int8", "int8_b"],
        _benchmark(tmp_path, rows),
        None,
        [None] * 3,
        ("maximize", "speedup"),
        PARAMS,
    )
    assert outcome.chosen is not None and outcome.chosen.id == "int8_b"
    assert outcome.chosen.values["speedup_low"] > 1


def test_without_the_original_among_the_candidates_the_fastest_is_chosen(tmp_path):
    """The rule keeps the original where it can be delivered; among optimized models alone (the benchmark's
    baseline timed but not offered) the fastest still wins, as before."""
    rows = [_row("model", ORIGINAL), _row("int8", WITHIN_NOISE)]
    benchmark = _benchmark(tmp_path, rows)
    outcome = choose(["int8"], benchmark, None, [None], ("minimize", "p50_ms"), PARAMS)
    assert outcome.chosen is not None and outcome.chosen.id == "int8"
