"""Recurrent ops' zero initial states left out when a graph is folded (stages/graphs/zero_states.py, issue 41):
exporters build them from the batch dim on every call; ONNX's default is the same zeros. A toy GRU for the
rule's edges (a state that is not zeros stays), openWakeWord's hey_mycroft for the real case (corpus wheel)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import corpus_file
from onnx import TensorProto, helper, numpy_helper

from ortflow.stages.graphs.specialization import fold

HIDDEN, FEATURES = 4, 3


def _gru(fill: float | None) -> onnx.ModelProto:
    """x [seq, batch, 3] through a GRU whose initial_h is built from x's batch dim: ConstantOfShape(fill) then a
    Slice, as PyTorch exports a zero state; fill None gives the state as a graph input instead."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.normal(size=(1, 3 * HIDDEN, FEATURES)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.normal(size=(1, 3 * HIDDEN, HIDDEN)).astype(np.float32), "R"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([HIDDEN], np.int64), "hidden"),
        numpy_helper.from_array(np.array([1], np.int64), "axis"),
        numpy_helper.from_array(np.array([0], np.int64), "start"),
    ]
    state = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "axis"], ["batch"]),
        helper.make_node("Concat", ["one", "batch", "hidden"], ["dims"], axis=0),
        helper.make_node(
            "ConstantOfShape",
            ["dims"],
            ["zeros"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [fill or 0.0]),
        ),
        helper.make_node("Slice", ["zeros", "start", "one", "start"], ["h0"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", "batch", FEATURES])]
    if fill is None:
        state = []
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, "batch", HIDDEN]))
    gru = helper.make_node("GRU", ["x", "W", "R", "", "", "h0"], ["", "h"], hidden_size=HIDDEN)
    graph = helper.make_graph(
        [*state, gru],
        "gru",
        inputs,
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, None)],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _run(model: onnx.ModelProto, feed: dict) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feed)[0]


def test_a_zero_state_built_from_the_batch_is_left_out_and_the_batch_stays_free():
    """Shape -> Gather -> Concat -> ConstantOfShape -> Slice goes; the GRU runs on ONNX's default zeros, with
    the same outputs at batch 1 and batch 3 (the rewrite fixes no dim)."""
    original = _gru(0.0)
    folded = fold(original)
    gru = next(n for n in folded.graph.node if n.op_type == "GRU")
    assert len(gru.input) < 6 or gru.input[5] == "", gru
    assert [n.op_type for n in folded.graph.node] == ["GRU"]
    for batch in (1, 3):
        x = np.random.default_rng(batch).normal(size=(5, batch, FEATURES)).astype(np.float32)
        np.testing.assert_allclose(_run(folded, {"x": x}), _run(original, {"x": x}), atol=1e-6)


@pytest.mark.parametrize("fill", [0.5, None])
def test_a_state_that_is_not_zeros_stays(fill):
    """A ConstantOfShape of 0.5, or a state given as an input: the GRU keeps its initial_h."""
    folded = fold(_gru(fill))
    gru = next(n for n in folded.graph.node if n.op_type == "GRU")
    assert gru.input[5] != "", gru


@pytest.mark.corpus  # openwakeword is a corpus wheel
def test_hey_mycroft_loses_the_zero_states_its_lstms_built_on_every_call():
    """tf2onnx built each LSTM's zero h and c from the batch (Shape, Cast, Slice, Concat, Expand, Unsqueeze,
    Concat): 37 nodes -> 20 (17 with its first layer's directions joined, tests/test_bidirectional.py), the
    outputs the same at batch 1 and 2."""
    path = corpus_file("openwakeword", "openwakeword/resources/models/hey_mycroft_v0.1.onnx")
    original = onnx.load(str(path))
    folded = fold(original)
    assert (len(original.graph.node), len(folded.graph.node)) == (37, 17)
    assert all(
        list(n.input[5:7]) in ([], ["", ""]) for n in folded.graph.node if n.op_type == "LSTM"
    )
    for batch in (1, 2):
        x = np.random.default_rng(batch).normal(size=(batch, 16, 96)).astype(np.float32)
        np.testing.assert_allclose(
            _run(folded, {"input_1": x}), _run(original, {"input_1": x}), atol=1e-5
        )
