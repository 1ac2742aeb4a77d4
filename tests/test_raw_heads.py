"""Models read as they come (issue 36), on ddddocr's wheel (pinned in .ci/run): a YOLOX-style click-captcha
detector whose head [1, 3549, 6] is a raw grid (cell offsets, log sizes, objectness x class) and which takes
BGR pixels in 0-255, and a 1-channel (grayscale) OCR recogniser whose declared output [1, seqlen] is not the
shape it produces. The images are the repository's rendered text lines (recipes/data/images/lines)."""

from __future__ import annotations

from importlib.metadata import distribution
from pathlib import Path

import pytest
import yaml

LINES = Path(__file__).parent.parent / "recipes" / "data" / "images" / "lines" / "calibration"


def _model(name: str) -> Path:
    try:
        path = Path(str(distribution("ddddocr").locate_file(f"ddddocr/{name}")))
    except ImportError:
        pytest.skip("ddddocr is not installed (pip install --no-deps ddddocr==1.6.1)")
    return path


def _detection_params(recipe: Path) -> dict:
    stages = yaml.safe_load(recipe.read_text())["stages"]
    return stages["accuracy"]["with"]["metrics"]["detection"]


def test_a_raw_yolox_head_is_read_as_a_grid_chosen_by_plausibility(project, cli):
    recipe = project / "det.yaml"
    code, out, err = cli(
        "init", _model("common_det.onnx"), "--data", LINES, "--channels", "BGR",
        "--pixels", "0-255", "-o", recipe,
    )  # fmt: skip
    assert code == 0, out + err
    params = _detection_params(recipe)
    assert params["layout"] == "grid" and params["objectness"] is True, params
    text = recipe.read_text()
    chosen = next(line for line in text.splitlines() if "read as a raw grid" in line)
    assert "100% inside the image, 100% of a real size" in chosen, chosen
    assert "rather than [batch, 4 + classes, anchors] (YOLOv8)" in text
    # the pixels as said: BGR, unscaled; and the closing line states the assumption
    assert "channels: BGR, scale: 1" in text
    assert "pixels in [0, 255], no mean/std, BGR channels, as given" in out
    assert "first op on the image is Conv, not a normalisation" in out  # past its Focus slices


def test_the_metric_refuses_a_reference_whose_boxes_are_not_plausible():
    """The same head read as a YOLOv8 head agrees with itself; the metric must say the reading is wrong."""
    import numpy as np
    import onnxruntime as ort
    from PIL import Image

    from ortflow.api import StageError
    from ortflow.engine.contracts.params import fill_defaults
    from ortflow.stages.metrics.detection import DetectionAgreement

    session = ort.InferenceSession(
        str(_model("common_det.onnx")), providers=["CPUExecutionProvider"]
    )
    feeds, heads = [], []
    for path in sorted(LINES.iterdir())[:3]:
        canvas = Image.new("RGB", (416, 416), (114, 114, 114))
        image = Image.open(path).convert("RGB")
        image.thumbnail((416, 416))
        canvas.paste(image, (0, 0))
        pixels = np.asarray(canvas, dtype=np.float32)[..., ::-1].transpose(2, 0, 1)[None]
        feed = {"images": np.ascontiguousarray(pixels)}
        feeds.append(feed)
        heads.append(session.run(None, feed)[0])
    outputs = {"output": heads}
    metric = DetectionAgreement()
    grid = fill_defaults(
        {"output": "output", "layout": "grid", "objectness": True}, metric.params_schema
    )
    assert metric.compute(outputs, outputs, feeds, grid)["det_f1"] == 1.0
    wrong = fill_defaults({"output": "output"}, metric.params_schema)
    with pytest.raises(StageError, match="are not plausible .* set `layout`"):
        metric.compute(outputs, outputs, feeds, wrong)


def test_rgb_zero_one_pixels_on_a_bgr_0_255_detector_are_refused_naming_the_flags(project, cli):
    code, out, err = cli(
        "init", _model("common_det.onnx"), "--data", LINES, "-o", project / "r.yaml"
    )
    assert code != 0, out + err
    line = err.strip().splitlines()[-1]
    assert "no reading of 'output' gives plausible boxes" in line, err
    assert "--channels BGR, --pixels 0-255" in line and "`layout`" in line, line


def test_a_grayscale_model_is_fed_images_with_one_flag_and_the_header_shows_produced_shapes(
    project, cli
):
    model = _model("common.onnx")
    code, out, err = cli("init", model, "--data", LINES, "-o", project / "r.yaml")
    assert code != 0
    assert "--channels gray" in err and ".npz" in err, err
    recipe = project / "ocr.yaml"
    code, out, err = cli("init", model, "--data", LINES, "--channels", "gray", "-o", recipe)
    assert code == 0, out + err
    text = recipe.read_text()
    assert "channels: gray" in text
    header = next(line for line in text.splitlines() if line.startswith("#   387:"))
    assert "[1, seqlen] (on the data: [" in header, header
