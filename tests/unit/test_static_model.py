"""quantize_static's preparation of a model (stages/quantization/static_model.prepare) reads the stage's typed
settings (a FloatChoice made from StaticSettings), not its parameters by key: on a real two-MatMul graph, the
nodes kept float are the ones the settings choose, by the names preparing gives unnamed nodes."""

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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
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
