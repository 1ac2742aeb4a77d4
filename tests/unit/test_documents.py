"""engine.contracts.documents: the result documents round-trip to the very bytes the stages wrote before they were typed
(their digests are in the shipped lock files), and a file that is not a document is refused with its path and
the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ortflow.api import (
    AccuracyResults,
    BenchmarkResults,
    BenchmarkRow,
    Bounds,
    Latency,
    ReferenceValues,
    Selection,
    SelectionCandidate,
    StageError,
    read_document,
    with_speedups,
    write_document,
)
from ortflow.engine.contracts import documents  # typed here (ortflow.api loads these lazily)
from ortflow.engine.contracts.metric import Better
from ortflow.engine.contracts.provenance import DataProvenance, DataSource

# As benchmark v1 wrote a row (key order included), before BenchmarkRow existed.
ROW = {
    "model": "int8",
    "intra_op_threads": 0,
    "batch_size": 1,
    "providers_used": ["CPUExecutionProvider"],
    "session_create_s": 0.031,
    "peak_rss_mb": None,
    "size_mb": 5.6,
    "latencies_ms": [1.5, 1.25],
    "latency_ms": {
        "mean": 1.375,
        "min": 1.25,
        "max": 1.5,
        "p50": 1.375,
        "p90": 1.475,
        "p95": 1.487,
        "p99": 1.497,
    },
    "throughput_per_s": 727.27,
    "runs": 2,
    "sequence_length": None,
    "io_binding": False,
    "speedup": 1.6,
}
BENCHMARK = {
    "baseline": "model",
    "note": "",
    "load": {"cpus": 2, "load_1min": 1.5, "others_percent": None, "steal_percent": None},
    "machine": {"cpu": "x", "isa": "avx2"},
    "results": [{**ROW, "model": "model", "speedup": 1.0}, ROW],
    "profiles": {},
    "report": {
        "tables": [{"title": "Latency", "columns": ["model"], "rows": [["int8"]]}],
        "charts": [],
    },
}
DATA = {
    "provenance": "random",
    "loader": "random",
    "dataset": "feeds",
    "paths": [],
    "calibration_reused": False,
    "verified": False,
    "label": "unverified: random feeds",
}
ACCURACY = {
    "samples": 8,
    "results": {"int8": {"out": {"cosine_mean": 0.99, "max_abs": 0.1}}},
    "values": {"int8": {"cosine_mean": 0.99, "max_abs": 0.1}},
    "counted_at": {"int8": {"cosine_mean": "out", "max_abs": "out"}},
    "better": {"cosine_mean": "higher", "max_abs": "lower"},
    "reference_labelled": None,
    "gates": {"min": {"cosine_mean": 0.98}, "max": {}},
    "failures": [],
    "data": DATA,
    "report": {"tables": []},
    "reference": {"name": "model", "values": {"cosine_mean": 1.0, "max_abs": 0.0}},
}
SELECTION = {
    "objective": {"minimize": "p50_ms"},
    "constraints": {"min": {"cosine_mean": 0.98}, "max": {}},
    "data": DATA,
    "chosen": "int8",
    "candidates": [
        {
            "id": "model",
            "model": "model",
            "config": {},
            "values": {"p50_ms": 2.2, "cosine_mean": 1.0},
            "meets_constraints": True,
            "misses": [],
            "pareto": False,
            "chosen": False,
        },
        {
            "id": "int8",
            "model": "int8",
            "config": {},
            "values": {"p50_ms": 1.375, "cosine_mean": 0.99},
            "meets_constraints": True,
            "misses": [],
            "pareto": True,
            "chosen": True,
        },
    ],
    "report": {"tables": [], "charts": []},
}
KINDS = [(BENCHMARK, BenchmarkResults), (ACCURACY, AccuracyResults), (SELECTION, Selection)]


@pytest.mark.parametrize(("document", "kind"), KINDS, ids=lambda v: getattr(v, "__name__", ""))
def test_documents_round_trip_to_the_same_bytes(tmp_path: Path, document, kind):
    written = tmp_path / "in.json"
    written.write_text(json.dumps(document, indent=2), encoding="utf-8")
    again = tmp_path / "out.json"
    write_document(again, read_document(written, kind))
    assert again.read_bytes() == written.read_bytes()


def test_documents_read_typed():
    benchmark = BenchmarkResults.from_json(BENCHMARK)
    assert benchmark.row("int8") == benchmark.results[1]
    assert benchmark.results[1].latency_ms.p50 == 1.375 and benchmark.results[1].config() == (
        0,
        1,
        None,
        False,
        False,  # cuda_graph: False where the document predates it
    )
    accuracy = AccuracyResults.from_json(ACCURACY)
    assert accuracy.better == {"cosine_mean": Better.HIGHER, "max_abs": Better.LOWER}
    assert accuracy.model_values("model") == {
        "cosine_mean": 1.0,
        "max_abs": 0.0,
    }  # the reference against itself
    assert accuracy.data is not None and accuracy.data.provenance is DataProvenance.RANDOM
    selection = Selection.from_json(SELECTION)
    assert (selection.goal, selection.objective, selection.constraints) == (
        "minimize",
        "p50_ms",
        Bounds({"cosine_mean": 0.98}, {}),
    )
    assert selection.chosen_candidate() == selection.candidates[1]


def test_writers_build_the_documents_the_stages_wrote(tmp_path: Path):
    """Built from the dataclasses as the stages build them, each is the JSON written before, key for key."""
    latency = Latency(**ROW["latency_ms"])
    rows = [
        BenchmarkRow(
            "model",
            0,
            1,
            ["CPUExecutionProvider"],
            0.031,
            None,
            5.6,
            [2.0, 2.4],
            latency,
            727.27,
            2,
        ),
        BenchmarkRow(
            "int8",
            0,
            1,
            ["CPUExecutionProvider"],
            0.031,
            None,
            5.6,
            [1.5, 1.25],
            latency,
            727.27,
            2,
        ),
    ]
    rows = with_speedups(
        rows, "model", lambda base, row: round(base.latencies_ms[0] / row.latencies_ms[0], 3)
    )
    assert [r.speedup for r in rows] == [1.0, 1.333]
    source = DataSource(DataProvenance.RANDOM, "random", "feeds")
    accuracy = AccuracyResults(
        8,
        ACCURACY["results"],
        ACCURACY["values"],
        ACCURACY["counted_at"],
        {"cosine_mean": Better.HIGHER, "max_abs": Better.LOWER},
        None,
        Bounds({"cosine_mean": 0.98}),
        [],
        source,
        {"tables": []},
        ReferenceValues("model", {"cosine_mean": 1.0, "max_abs": 0.0}),
    )
    assert json.dumps(accuracy.to_json()) == json.dumps(ACCURACY)
    selection = Selection(
        "minimize",
        "p50_ms",
        Bounds({"cosine_mean": 0.98}),
        source,
        "int8",
        [SelectionCandidate(**c) for c in SELECTION["candidates"]],
        {"tables": [], "charts": []},
    )
    assert json.dumps(selection.to_json()) == json.dumps(SELECTION)


@pytest.mark.parametrize(
    ("document", "kind", "broken"),
    [
        (BENCHMARK, BenchmarkResults, {"results": [{**ROW, "latency_ms": {"p50": 1.0}}]}),
        (ACCURACY, AccuracyResults, {"values": None}),
        (SELECTION, Selection, {"candidates": [{"id": "x"}]}),
    ],
)
def test_a_file_that_is_not_the_document_is_refused_naming_it(
    tmp_path: Path, document, kind, broken
):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({**document, **broken}), encoding="utf-8")
    with pytest.raises(StageError, match=rf"{path}: not a .* — give a"):
        read_document(path, kind)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(StageError, match=rf"{path}: not a results document"):
        read_document(path, kind)


def test_a_writer_cannot_drift_from_the_schema(tmp_path: Path):
    broken = BenchmarkResults.from_json(BENCHMARK)
    object.__setattr__(broken, "baseline", 3)
    with pytest.raises(ValueError, match="benchmark_results.schema.json"):
        write_document(tmp_path / "b.json", broken)


def test_the_schemas_are_valid_json_schemas():
    jsonschema = pytest.importorskip("jsonschema")
    from ortflow.engine.contracts.documents import schema

    for name in ("benchmark_results", "accuracy_results", "selection"):
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_numpy_numbers_in_a_document_write_the_bytes_they_always_did(tmp_path: Path):
    """A stage's values are often numpy scalars: to_json() makes them JSON (json_value, typed) and the file holds
    what json.dumps(default=float) always wrote for them (an int64 as a float, a float32 widened)."""
    np = pytest.importorskip("numpy")
    values = {"int8": {"cosine_mean": np.float32(0.75), "max_abs": np.int64(3)}}
    accuracy = documents.AccuracyResults(
        8,
        {"int8": {"out": {"cosine_mean": np.float32(0.75)}}},
        values,
        {},
        {"cosine_mean": Better.HIGHER, "max_abs": Better.LOWER},
        None,
        documents.Bounds({"cosine_mean": np.float32(0.5)}),
        [],
        None,
        {"tables": []},
    )
    path = tmp_path / "accuracy.json"
    documents.write(path, accuracy)
    before = {**ACCURACY, "results": {"int8": {"out": {"cosine_mean": np.float32(0.75)}}}}
    before.update(values=values, counted_at={}, reference_labelled=None, failures=[])
    before.update(gates={"min": {"cosine_mean": np.float32(0.5)}, "max": {}}, report={"tables": []})
    for key in ("data", "reference"):
        before.pop(key, None)
    order = ["samples", "results", "values", "counted_at", "better", "reference_labelled", "gates"]
    expected = {k: before[k] for k in [*order, "failures", "report"]}
    assert path.read_text() == json.dumps(expected, indent=2, default=float)
    assert documents.read(path, documents.AccuracyResults).model_values("int8") == {
        "cosine_mean": 0.75,
        "max_abs": 3.0,
    }


def test_a_value_that_is_not_json_is_refused_naming_its_type():
    from ortflow.engine.contracts.json_values import json_value

    assert json_value({"a": (1, 2.5), "b": [None, True]}) == {"a": [1, 2.5], "b": [None, True]}
    with pytest.raises(TypeError, match=r"not a JSON value: \w*Path"):
        json_value({"a": Path("x")})
