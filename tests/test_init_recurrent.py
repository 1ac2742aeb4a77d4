"""init's dynamic-LSTM candidate (issue 41): static INT8 has no LSTM kernel (ORT's QDQ leaves an LSTM float, with
its Q/DQ around it), so for a model with an LSTM op init proposes dynamic INT8 of it (ORT's DynamicQuantizeLSTM)
beside the static candidate, and `pick` times both. On faster-whisper's Silero VAD v6 that candidate keeps every
decision at 1.19-1.24x of fp32 where static INT8 is refused (bench/README.md); the corpus test of silero-vad-v6
(tests/test_corpus.py, expected: delivered) is the real-model check. These are unit tests of the decision."""

from __future__ import annotations

import numpy as np
from conftest import toy_model
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.model_facts import read_model_facts
from ortflow.engine.starter.drafts import StageDraft, Target
from ortflow.engine.starter.proposal import propose_stages
from ortflow.engine.starter.roles import read_roles

HIDDEN, FEATURES = 8, 12


def _classifier(path, recurrent: bool):
    """[1, 16, 12] frames -> one probability: through an LSTM, or through a MatMul where `recurrent` is False."""
    rng = np.random.default_rng(0)
    if recurrent:
        weights = [
            numpy_helper.from_array(
                rng.normal(size=(1, 4 * HIDDEN, FEATURES)).astype(np.float32), "W"
            ),
            numpy_helper.from_array(
                rng.normal(size=(1, 4 * HIDDEN, HIDDEN)).astype(np.float32), "R"
            ),
        ]
        body = [
            helper.make_node("Transpose", ["frames"], ["seq"], perm=[1, 0, 2]),
            helper.make_node("LSTM", ["seq", "W", "R"], ["", "h"], hidden_size=HIDDEN),
        ]
    else:
        weights = [
            numpy_helper.from_array(rng.normal(size=(FEATURES, HIDDEN)).astype(np.float32), "W")
        ]
        body = [helper.make_node("MatMul", ["frames", "W"], ["h"])]
    nodes = body + [
        helper.make_node("ReduceMean", ["h"], ["m"], axes=[-1], keepdims=0),
        helper.make_node("Sigmoid", ["m"], ["prob"]),
    ]
    return toy_model(
        path,
        nodes,
        [helper.make_tensor_value_info("frames", TensorProto.FLOAT, ["n", 16, FEATURES])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, None)],
        weights,
    )


def _stages(path, real_data: bool) -> tuple[dict[str, StageDraft], list[str]]:
    roles = read_roles(read_model_facts(path))
    proposal = propose_stages(roles, Target.CPU, real_data=real_data, min_accuracy=None)
    return {stage.name: stage for stage in proposal.stages}, proposal.candidates


def test_a_model_with_an_lstm_gets_a_dynamic_lstm_candidate(tmp_path):
    for real_data in (True, False):
        stages, candidates = _stages(_classifier(tmp_path / "lstm.onnx", True), real_data)
        dynamic = stages["int8_dynamic"]
        assert dynamic.uses == "quantize_dynamic" and "int8_dynamic.model" in candidates
        assert "LSTM" in dynamic.params["op_types_to_quantize"]
        assert dynamic.optional and any("DynamicQuantizeLSTM" in line for line in dynamic.comments)


def test_without_an_lstm_no_lstm_is_named(tmp_path):
    stages, _ = _stages(_classifier(tmp_path / "mm.onnx", False), True)
    if "int8_dynamic" in stages:  # MatMul-heavy: the MatMul/Gemm candidate, LSTM not named
        assert "LSTM" not in stages["int8_dynamic"].params["op_types_to_quantize"]


def test_ort_s_dynamic_lstm_counts_as_quantized(tmp_path):
    """ORT's quantize_dynamic turns an LSTM into com.microsoft's DynamicQuantizeLSTM; the stage counted only
    MatMul-family ops, said "quantized nothing" and dropped silero-vad-v6's candidate."""
    from onnxruntime.quantization import quantize_dynamic

    from ortflow.stages.quantization.quantized_graph import quantized_ops

    quantized = tmp_path / "lstm-int8.onnx"
    quantize_dynamic(
        _classifier(tmp_path / "lstm.onnx", True), quantized, op_types_to_quantize=["LSTM"]
    )
    assert quantized_ops(quantized)["by_op_type"] == {"DynamicQuantizeLSTM": 1}
