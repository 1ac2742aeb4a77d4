"""engine.ort.onnx_model on toy graphs: what is refused as not a model, and which tensors' external-data
locations are checked (every one ORT may read, not only the top-level initializers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.onnx_model import (
    ExternalDataOutside,
    NotAnOnnxModel,
    external_data_files,
    load_graph,
)

OUTSIDE = "../../x"


def _external(tensor: TensorProto, location: str) -> TensorProto:
    """`tensor` re-pointed at external data in `location` (as a hostile file would name it)."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "64")):
        tensor.external_data.add(key=key, value=value)
    return tensor


def _save(path: Path, nodes: list, initializers: list | None = None) -> Path:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
        initializers or [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


def _weights(name: str, location: str) -> TensorProto:
    return _external(numpy_helper.from_array(np.ones((4, 4), np.float32), name), location)


def test_a_constant_nodes_tensor_naming_data_outside_is_refused(tmp_path):
    constant = helper.make_node("Constant", [], ["y"], value=_weights("v", OUTSIDE))
    with pytest.raises(ExternalDataOutside, match=f"names external data at '{OUTSIDE}'"):
        external_data_files(_save(tmp_path / "model.onnx", [constant]))


def test_a_subgraphs_initializer_naming_data_outside_is_refused(tmp_path):
    def branch(name: str, location: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Identity", [name], ["out"])],
            name,
            [],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 4])],
            [_weights(name, location)],
        )

    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=branch("a", "a.bin"), else_branch=branch("b", OUTSIDE)
    )
    with pytest.raises(ExternalDataOutside, match=f"names external data at '{OUTSIDE}'"):
        external_data_files(_save(tmp_path / "model.onnx", [node]))


def test_tensors_inside_the_folder_are_listed_wherever_they_are(tmp_path):
    constant = helper.make_node("Constant", [], ["y"], value=_weights("v", "v.bin"))
    path = _save(tmp_path / "model.onnx", [constant], [_weights("w", "w.bin")])
    assert external_data_files(path) == ["v.bin", "w.bin"]


def test_an_empty_file_is_said_to_be_empty_not_a_model_with_no_inputs(tmp_path):
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(NotAnOnnxModel, match=r"empty.onnx is empty \(0 bytes\): not an ONNX model"):
        load_graph(tmp_path / "empty.onnx")


def test_init_says_an_empty_file_is_empty(project, cli):
    (project / "empty.onnx").write_bytes(b"")
    code, out, err = cli("init", "empty.onnx")
    assert code == 2 and "is empty (0 bytes): not an ONNX model" in err and "no inputs" not in err
