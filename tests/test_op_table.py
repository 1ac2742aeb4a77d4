"""`op_types_to_quantize: auto` (issue 42): INT8 only for the op classes the kept table measured faster on the
target's kernel family; no table, everything quantized and said; the table's digest, never a timing, in the key."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnx
import pytest
import yaml
from conftest import write

from ortflow.engine import environment
from ortflow.stages.quantization import op_table

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import corpus_feeds  # type: ignore[import-not-found]  # noqa: E402

MYCROFT = "openwakeword/resources/models/hey_mycroft_v0.1.onnx"
EMBEDDING = "openwakeword/resources/models/embedding_model.onnx"
AMX = "x86_64: amx"


def mycroft() -> onnx.ModelProto:
    return onnx.load(str(corpus_feeds.wheel_path("openwakeword", MYCROFT)))


def test_amx_decision_follows_the_kept_table():
    """On amx, the classes the table measured slower (and only those) stay float, by node name."""
    data = op_table.table()
    slower = op_table.slower_classes(AMX, data)
    assert slower, "the amx table measures at least one class slower in INT8"
    nodes = op_table.model_nodes(mycroft())
    rule = op_table.decide(AMX, nodes, data)
    present = {op_table.class_name(op, klass) for _, op, klass in nodes}
    assert rule.measured and set(rule.slower) == {c for c in slower if c in present}
    kept = {name for name, op, klass in nodes if op_table.class_name(op, klass) in slower}
    assert set(rule.nodes) == kept and kept
    assert f"kept float because faster so on {AMX}" in rule.summary()
    for name in rule.slower:
        assert name in rule.summary()


def test_a_family_without_a_table_quantizes_everything_and_says_so():
    rule = op_table.decide("x86_64: avx2", op_table.model_nodes(mycroft()), op_table.table())
    assert not rule.measured and rule.nodes == () and rule.slower == ()
    assert "no INT8 speed table for x86_64: avx2" in rule.summary()
    assert "every op type is quantized" in rule.summary()


def test_shape_classes():
    assert op_table.shape_class("Conv", 32, (32, 1, 3, 3)) == "depthwise"
    assert op_table.shape_class("Conv", 1, (32, 16, 3, 3)) == "dense"
    assert op_table.shape_class("MatMul", 1, (96, 64)) == "small"
    assert op_table.shape_class("MatMul", 1, (384, 1536)) == "large"
    assert op_table.shape_class("MatMul", 1, None) == "activations"
    assert op_table.shape_class("Concat", 1, None) == ""


RECIPE = """
version: 1
name: wakeword
target: {{cpu: {target}}}
inputs:
  model: {{package: openwakeword, file: {model}}}
datasets:
  calib: {{loader: npz, with: {{path: {npz}, limit: 8}}}}
stages:
  table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.calib}}}}
  int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.calib}},
         with: {{op_types_to_quantize: {op_types}}}}}
"""


def _run(
    folder: Path, cli, npz: Path, model: str = EMBEDDING, op_types: str = "auto"
) -> tuple[dict, dict, bytes, str]:
    folder.mkdir()
    recipe = write(
        folder / "recipe.yaml",
        RECIPE.format(target="amx", model=model, npz=npz, op_types=op_types),
    )
    code, out, err = cli("run", recipe)
    assert code == 0, err
    lock = yaml.safe_load((folder / "recipe.yaml.lock").read_text())["stages"]["int8"]
    metrics = json.loads((folder / "out/wakeword/int8/metrics.json").read_text())
    return lock, metrics, (folder / "out/wakeword/int8/model.onnx").read_bytes(), out + err


def test_auto_on_a_corpus_model_keeps_the_slower_classes_float_and_is_deterministic(
    project, cli, monkeypatch
):
    """openWakeWord's embedding CNN through calibrate and quantize_static with auto for amx: its dense
    convolutions are quantized, the table's slower classes stay float (no Q/DQ on them) and the summary says
    which; two runs in fresh folders give the same key and bytes, and the key holds the table's digest."""
    npz = project / "feeds.npz"
    corpus_feeds.mel_frames(npz)
    first = _run(project / "a", cli, npz)
    second = _run(project / "b", cli, npz)
    assert first[0]["key"] == second[0]["key"] and first[2] == second[2]
    lock, metrics, model_bytes, said = first
    assert lock["env"][op_table.TABLE_FACT] == op_table.digest()
    assert lock["env"]["target_isa"] == AMX
    slower = op_table.slower_classes(AMX, op_table.table()) or set()
    kept_classes = set(metrics["op_types_auto"]["kept_float_classes"])
    assert kept_classes and kept_classes <= slower and metrics["quantized_by_op_type"]["Conv"] > 0
    # the kept nodes went to ORT's nodes_to_exclude: fewer Q/DQ than whole-model INT8 of the same recipe
    assert metrics["op_types_auto"]["kept_float_nodes"] > 0
    assert not {c.split("/")[0] for c in kept_classes if "/" not in c} & set(
        metrics["quantized_by_op_type"]
    )
    _, everything, _, _ = _run(project / "c", cli, npz, op_types="[]")
    assert metrics["QuantizeLinear"] < everything["QuantizeLinear"]
    assert set(everything["quantized_by_op_type"]) - set(metrics["quantized_by_op_type"])
    assert "kept float because faster so on x86_64: amx" in said


def test_the_table_digest_is_in_the_key_and_timings_are_not(monkeypatch):
    """A changed table is a new key; the fact is the file's sha256, the same on every call."""
    from ortflow.stages.quantize_dynamic import QuantizeDynamic
    from ortflow.stages.quantize_static import QuantizeStatic

    for stage in (QuantizeStatic(), QuantizeDynamic()):
        facts = stage.env_facts({"op_types_to_quantize": "auto", "reduce_range": False})
        assert op_table.TABLE_FACT in facts and "target_isa" in facts
        assert op_table.TABLE_FACT not in stage.env_facts(
            {"op_types_to_quantize": [], "reduce_range": False}
        )
    environment.fact.cache_clear()
    assert environment.fact(op_table.TABLE_FACT) == op_table.digest() == op_table.digest()
    assert environment.fact("data:ortflow.stages.quantization/no-such.json") == "missing"


@pytest.mark.parametrize("family", ["x86_64: amx"])
def test_the_kept_table_says_where_it_was_measured(family):
    entry = op_table.table()["families"][family]
    assert entry["host"] and entry["date"] and entry["onnxruntime"]
    for name, row in entry["classes"].items():
        assert row["faster"] == (row["int8_us"] < row["float_us"]), name


def test_auto_refuses_a_model_with_nothing_faster_in_int8(project, cli):
    """hey_mycroft (0.94x of fp32 as whole-model INT8 on amx): every quantizable class it has was measured
    slower, so auto quantizes nothing and the stage says why (an optional candidate is then dropped)."""
    # its one weighted op, MatMul + Add, is a Gemm [96, 1] once pre-processed (what quantize_static reads)
    if "Gemm/small" not in (op_table.slower_classes(AMX, op_table.table()) or set()):
        pytest.skip("the kept table measures a small Gemm faster in INT8 on amx")
    npz = project / "feeds.npz"
    corpus_feeds.speech_embeddings(npz)
    (project / "a").mkdir()
    recipe = write(
        project / "a/recipe.yaml",
        RECIPE.format(target="amx", model=MYCROFT, npz=npz, op_types="auto"),
    )
    code, _, err = cli("run", recipe)
    assert code != 0
    assert "op_types_to_quantize auto kept every node float" in err and "x86_64: amx" in err
