"""The quantizers' helpers read the stage's typed settings, not its parameters by key (issue 43 review):
static_model.prepare a FloatChoice made from StaticSettings, the sanity check any quantizer's settings, and
quantized_ops returns its form. Each on a real graph built here (two MatMuls; a QDQ MatMul)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ortflow.api import settings_of
from ortflow.engine.contracts.params import fill_defaults
from ortflow.stages.quantization import op_table, static_model
from ortflow.stages.quantization.ort_quantizer import StaticSettings
from ortflow.stages.quantize_static import QuantizeStatic


def _two_matmuls(path: Path) -> Path:
    """x -> MatMul -> Relu -> MatMul -> y, its nodes unnamed."""
    weights = [numpy_helper.from_array(np.eye(4, dtype=np.float32), f"w{i}") for i in (1, 2)]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, path)
    return path


def test_preparing_keeps_float_what_the_typed_settings_choose(tmp_path):
    given = {"op_types_to_quantize": "auto", "keep_float_first": 1, "keep_float_op_types": ["Relu"]}
    params = fill_defaults(given, QuantizeStatic.params_schema)
    settings = settings_of(StaticSettings, op_table.without_auto(params))
    asked = static_model.FloatChoice.of(settings)
    assert asked.op_types_to_quantize == () and asked.keep_float_op_types == ("Relu",)
    model = _two_matmuls(tmp_path / "m.onnx")
    chosen = static_model.prepare(model, asked, {"x", "h", "r", "y"}, set(), tmp_path / "p.onnx")
    assert chosen.kept_float == ["MatMul_0", "Relu_1"]
    assert chosen.path == tmp_path / "p.onnx" and chosen.opset_upgraded_from is None
    assert [n.name for n in onnx.load(str(chosen.path)).graph.node] == [
        "MatMul_0",
        "Relu_1",
        "MatMul_2",
    ]


def _qdq_matmul(path: Path) -> Path:
    """x -> QuantizeLinear -> DequantizeLinear -> MatMul (its weight dequantized too) -> y."""
    scale = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, dtype=np.uint8), "z")
    weight = numpy_helper.from_array(np.ones((4, 4), dtype=np.uint8), "wq")
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["wd"]),
        helper.make_node("MatMul", ["xd", "wd"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [scale, zero, weight],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path
    )
    return path


def test_what_quantization_did_is_counted_in_its_typed_form(tmp_path):
    """quantized_ops returns its form (QuantizedOps: counts by op type, activations), the counts that
    quantize_static's metrics.json holds as numbers (StaticMetrics), not free JSON."""
    from typing import get_type_hints

    from ortflow.stages.quantization.ort_quantizer import StaticMetrics
    from ortflow.stages.quantization.quantized_graph import QuantizedOps, quantized_ops

    found = quantized_ops(_qdq_matmul(tmp_path / "q.onnx"))
    assert set(found) == set(QuantizedOps.__annotations__)
    assert found["by_op_type"] == {"MatMul": 1} and found["activations"] == 1
    counts = get_type_hints(QuantizedOps)["by_op_type"]
    assert get_type_hints(StaticMetrics)["quantized_by_op_type"] == counts == dict[str, int]


def test_the_sanity_check_reads_the_quantize_stages_settings_not_its_params(tmp_path):
    """verify_quantized takes its three parameters from the stage's settings (any of the quantizers'): a stage
    whose ctx.params lacks them (a plugin's, or one read typed) is checked all the same."""
    from dataclasses import replace

    from ortflow.api import StageContext
    from ortflow.stages.quantization import sanity

    model = _two_matmuls(tmp_path / "m.onnx")
    ctx = StageContext("q", {}, {}, tmp_path, {}, tmp_path)
    settings = replace(StaticSettings(), sanity_samples=2)
    measured: dict = {}
    said = sanity.verify_quantized(ctx, settings, model, model, measured)
    assert said == "sanity: worst output cosine 1.000 on 2 random samples"
    assert measured["sanity"]["data"] == "2 random samples"
    off = replace(settings, sanity_check=False)
    assert sanity.verify_quantized(ctx, off, model, model, {}) == "sanity check off"
