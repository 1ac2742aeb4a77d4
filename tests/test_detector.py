"""A real YOLO-style detector (NudeNet's YOLOv8n, from its PyPI wheel): its output Concat joins box
coordinates in pixels with sigmoid class scores. Quantized naively, one scale rounds the scores away; the
quantize stage must say so (and where), and its default must keep the detections — checked here
independently, by decoding detections on held-out photos."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"
PHOTOS = RECIPES / "data" / "images" / "photos"
DATA = Path(__file__).parent / "data"


def _module(name: str, folder: Path = DATA):
    """A helper module of tests/data or recipes/data (shared with bench/quantization_traps.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _model() -> Path:
    from importlib.metadata import distribution

    return Path(distribution("nudenet").locate_file("nudenet/320n.onnx"))


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_a_yolo_detector_naively_quantized_fails_loudly_and_the_default_keeps_its_detections(
    project, cli
):
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: detector
        inputs:
          model: {{package: nudenet, file: nudenet/320n.onnx}}
        datasets:
          photos: {{loader: images, with: {{path: {PHOTOS / "calibration"}, size: [320, 320], resize: letterbox}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.photos}}}}
          default: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.photos}}}}
          naive:
            uses: quantize_static
            in: {{model: inputs.model, calibration: table.table, data: datasets.photos}}
            with: {{avoid_traps: false}}
          naive_kept:
            uses: quantize_static
            in: {{model: inputs.model, calibration: table.table}}
            with: {{avoid_traps: false, sanity_check: false}}
    """,
    )
    code, out, err = cli("run", recipe, "-k")
    assert code == 3, (out, err)
    line = next(x for x in err.splitlines() if "stage 'naive'" in x)
    assert "channels along axis 1" in line and "lost their signal" in line, line
    assert "/model.22/Sigmoid" in line and "/model.22/Concat_25" in line, (
        line
    )  # the score head and its Concat
    metrics = json.loads((project / "out/detector/default/metrics.json").read_text())
    assert list(metrics["traps_kept_float"]["mixed_range_concats"]) == ["/model.22/Concat_25"]
    assert metrics["quantized_by_op_type"]["Conv"] > 50  # the rest of the network is INT8
    recall = _module("yolo_detections").recall
    found, total = recall(
        _model(), project / "out/detector/default/model.onnx", PHOTOS / "held-out"
    )
    assert total >= 4 and found / total >= 0.8, (found, total)
    naive_found, _ = recall(
        _model(), project / "out/detector/naive_kept/model.onnx", PHOTOS / "held-out"
    )
    assert naive_found < found  # what the check stopped was really broken


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_a_classifier_with_primitive_layernorm_and_softmax_keeps_its_labels(project, cli):
    """magika's file-type classifier (from its wheel): LayerNorm as E[x^2]-E[x]^2 with ReduceSum, Rsqrt and
    broadcasts, softmax as Exp/ReduceSum/Div. The default finds both traps and keeps them in float, and more
    of its labels agree with the float model's on files it never saw than all-op QDQ's do."""
    features = RECIPES / "data" / "magika_bytes.py"
    files = RECIPES / "data" / "files"
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: classifier
        inputs:
          model: {{package: magika, file: magika/models/standard_v3_3/model.onnx}}
        datasets:
          files: {{loader: python, with: {{path: {features}, function: feeds, data: {files / "calibration"}}}}}
          held_out: {{loader: python, with: {{path: {features}, function: feeds, data: {files / "held-out"}}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.files}}}}
          default: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.files}}}}
          naive:
            uses: quantize_static
            in: {{model: inputs.model, calibration: table.table}}
            with: {{avoid_traps: false, sanity_check: false}}
          labels:
            uses: validate_accuracy
            in: {{reference: inputs.model, candidates: [default.model, naive.model], data: datasets.held_out}}
            with: {{metrics: {{exact: {{outputs: [target_label], argmax_axis: -1}}}}}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, (out, err)
    metrics = json.loads((project / "out/classifier/default/metrics.json").read_text())
    kinds = sorted(
        label.split(" at ")[0] for label in metrics["traps_kept_float"]["decomposed_ops"]
    )
    assert kinds == ["LayerNorm", "LayerNorm", "Softmax"]
    values = json.loads((project / "out/classifier/labels/accuracy.json").read_text())["values"]
    assert values["default"]["samples_unchanged"] >= 0.88, values
    assert values["default"]["samples_unchanged"] > values["naive"]["samples_unchanged"], values


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_an_ocr_recogniser_broken_by_per_tensor_weights_is_refused_and_per_channel_reads(
    project, cli
):
    """PP-OCRv4's text recogniser (rapidocr's wheel): per-tensor Conv weights (BatchNorm folded in) make it
    answer blank almost everywhere, which keeps a cosine of 0.73; the check looks at the characters the
    float model reads instead, and per-channel weights (the fix it suggests) read them."""
    lines = PHOTOS.parent / "lines"
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: reader
        inputs:
          model: {{package: rapidocr-onnxruntime, file: rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx}}
        datasets:
          lines: {{loader: images, with: {{path: {lines / "calibration"}, size: [48, 320], resize: letterbox,
                                          mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], channels: BGR}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.lines}}}}
          default: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.lines}}}}
          per_channel:
            uses: quantize_static
            in: {{model: inputs.model, calibration: table.table, data: datasets.lines}}
            with: {{per_channel: true}}
    """,
    )
    code, out, err = cli("run", recipe, "-k")
    assert code == 3, (out, err)
    line = next(x for x in err.splitlines() if "stage 'default'" in x)
    assert (
        "its top class agrees with the float model's at only" in line
        and "try per_channel: true" in line
    ), line
    from importlib.metadata import distribution

    from PIL import Image

    model = Path(
        distribution("rapidocr-onnxruntime").locate_file(
            "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
        )
    )
    ours = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(
        str(project / "out/reader/per_channel/model.onnx"), providers=["CPUExecutionProvider"]
    )
    same = read = 0
    for path in sorted(
        (lines / "held-out").iterdir()
    ):  # rapidocr's own preprocessing: height 48, padded to 320
        image = Image.open(path).convert("RGB")
        width = min(320, round(image.size[0] * 48 / image.size[1]))
        pixels = np.zeros((48, 320, 3), np.float32)
        pixels[:, :width] = np.asarray(image.resize((width, 48)), np.float32)[:, :, ::-1] / 255
        feed = {"x": ((pixels - 0.5) / 0.5).transpose(2, 0, 1)[None]}
        expected, got = (
            ours.run(None, feed)[0][0].argmax(-1),
            theirs.run(None, feed)[0][0].argmax(-1),
        )
        characters = expected != 0  # 0 is CTC's blank
        same, read = (
            same + int((expected[characters] == got[characters]).sum()),
            read + int(characters.sum()),
        )
    assert read >= 50 and same / read >= 0.8, (same, read)
