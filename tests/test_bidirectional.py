"""A bidirectional LSTM's directions joined as tf2onnx writes a Keras Bidirectional layer (Slice, Squeeze, Concat
on each direction), rewritten as one Transpose and Reshape when a graph is folded (stages/graphs/bidirectional.py,
issue 41). A toy graph for the rule and for what it must leave alone; openWakeWord's hey_mycroft for the real
case."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import corpus_file
from onnx import TensorProto, helper, numpy_helper

from ortflow.stages.graphs.specialization import fold

HIDDEN = 8


def _ints(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _joined(first: int = 0, axis: int = 2, layers: int = 1) -> onnx.ModelProto:
    """x [seq, batch, 5] -> `layers` bidirectional LSTMs, after each its directions sliced out of Y, squeezed and
    concatenated on `axis` (`first` the direction put first) -> Relu. No node has a name, as many exporters
    leave them."""
    rng = np.random.default_rng(0)
    weights = [_ints("zero", 0), _ints("one", 1), _ints("two", 2)]
    nodes, x, width = [], "x", 5
    for layer in range(layers):
        w, r, y, j = (f"{t}{layer}" for t in ("W", "R", "y", "joined"))
        weights += [
            numpy_helper.from_array(rng.normal(size=(2, 4 * HIDDEN, width)).astype(np.float32), w),
            numpy_helper.from_array(rng.normal(size=(2, 4 * HIDDEN, HIDDEN)).astype(np.float32), r),
        ]
        halves = [f"forward{layer}", f"backward{layer}"]
        nodes += [
            helper.make_node("LSTM", [x, w, r], [y], direction="bidirectional", hidden_size=HIDDEN),
            helper.make_node("Slice", [y, "zero", "one", "one"], [halves[0] + "_4d"]),
            helper.make_node("Slice", [y, "one", "two", "one"], [halves[1] + "_4d"]),
            helper.make_node("Squeeze", [halves[0] + "_4d", "one"], [halves[0]]),
            helper.make_node("Squeeze", [halves[1] + "_4d", "one"], [halves[1]]),
            helper.make_node("Concat", halves[:: 1 if first == 0 else -1], [j], axis=axis),
        ]
        x, width = j, 2 * HIDDEN
    nodes.append(helper.make_node("Relu", [x], ["out"]))
    graph = helper.make_graph(
        nodes,
        "bidirectional",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", "batch", 5])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_the_join_becomes_a_transpose_and_a_reshape():
    original = _joined()
    folded = fold(original)
    assert [n.op_type for n in folded.graph.node] == ["LSTM", "Transpose", "Reshape", "Relu"]
    x = np.random.default_rng(1).normal(size=(6, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(_run(folded, x), _run(original, x))


def test_two_stacked_joins_of_unnamed_nodes_are_both_rewritten():
    """Two layers, no node names: both joins are rewritten, the outputs unchanged."""
    original = _joined(layers=2)
    folded = fold(original)
    assert [n.op_type for n in folded.graph.node] == ["LSTM", "Transpose", "Reshape"] * 2 + ["Relu"]
    x = np.random.default_rng(4).normal(size=(6, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(_run(folded, x), _run(original, x))


@pytest.mark.parametrize("first, axis", [(1, 2), (0, 1)])
def test_another_join_stays(first: int, axis: int):
    """Backward first, or joined on another axis: not Y's own layout, so the nodes stay."""
    original = _joined(first, axis)
    folded = fold(original)
    assert "Concat" in {n.op_type for n in folded.graph.node}
    x = np.random.default_rng(2).normal(size=(6, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(_run(folded, x), _run(original, x))


@pytest.mark.corpus  # openwakeword is a corpus wheel
def test_hey_mycroft_joins_its_first_layer():
    """Its first layer's join (5 nodes) becomes 2; the second layer keeps one direction's last step and the
    other's first, not this join, and stays."""
    path = corpus_file("openwakeword", "openwakeword/resources/models/hey_mycroft_v0.1.onnx")
    original = onnx.load(str(path))
    folded = fold(original)
    ops = [n.op_type for n in folded.graph.node]
    assert ops.count("Reshape") == 1 and ops.count("Concat") == 1, ops
    name = original.graph.input[0].name
    x = np.random.default_rng(3).normal(size=(2, 16, 96)).astype(np.float32)
    session = {
        k: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        for k, m in (("original", original), ("folded", folded))
    }
    np.testing.assert_allclose(
        session["folded"].run(None, {name: x})[0],
        session["original"].run(None, {name: x})[0],
        atol=1e-6,
    )
