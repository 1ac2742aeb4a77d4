"""Which op types (and shape classes) run faster in INT8, with their Q/DQ, than in float on this host's INT8 kernel
family (issue 42): measured once with ORT's profiler on corpus models, kept as data for `op_types_to_quantize: auto`.

    python bench/int8_op_table.py [--rounds N] [--write] [MODEL ...]

Per model: `engine init` with the corpus data writes its recipe; its calibrate and quantize_static stages run as
written (a real calibration), the rest dropped. The fp32 model and the QDQ model are then profiled, interleaved
in rounds (one intra-op thread, ORT's full graph optimizations), and each kernel's time is charged to the float
class it stands for: QLinearConv to Conv/dense or Conv/depthwise, a QuantizeLinear to the INT8 op it feeds, a
DequantizeLinear to the one it leaves (layout reorders likewise). A class is faster in INT8 when its INT8 time
(Q/DQ included) summed over the models is below its float time; the median of the rounds is taken and the spread
(max/min of the per-round ratio) printed. `--write` keeps the result in stages/quantization/int8_op_table.json
under this host's kernel family (the other families' entries stay).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import quick  # noqa: E402

from ortflow.engine.leaves.environment import fact  # noqa: E402
from ortflow.stages.quantization import op_table  # noqa: E402

# Models the table is measured on: CNNs (dense and depthwise), recurrent and MatMul models with real data.
MODELS = [
    "wakeword-mycroft",
    "wakeword-embedding",
    "doc-orientation",
    "nudenet",
    "magika",
    "captcha-crnn",
    "silero-vad-op15",
    "name-encoder",
]
QUICK_MODELS = ["wakeword-mycroft"]
RUNS = 20
# INT8 kernels (ORT's fused QDQ groups and contrib ops) -> (the float op they stand for, their weight input)
INT8_KERNELS = {
    "QLinearConv": ("Conv", 3),
    "ConvInteger": ("Conv", 1),
    "QLinearMatMul": ("MatMul", 3),
    "MatMulIntegerToFloat": ("MatMul", 1),
    "DynamicQuantizeMatMul": ("MatMul", 1),
    "MatMulInteger": ("MatMul", 1),
    "QGemm": ("Gemm", 3),
}
FLOAT_FUSED = {"FusedConv": "Conv", "FusedMatMul": "MatMul", "FusedGemm": "Gemm"}
QDQ = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
LAYOUT = {"ReorderInput", "ReorderOutput"}


def origin(node: Any, shapes: dict[str, tuple[int, ...]]) -> str | None:
    """The table class a node of an optimized graph stands for; None for Q/DQ and layout nodes."""
    op = node.op_type
    if op in QDQ or op in LAYOUT:
        return None
    group = next((a.i for a in node.attribute if a.name == "group"), 1)
    if op in INT8_KERNELS:
        base, index = INT8_KERNELS[op]
    elif op.startswith("QLinear"):
        base, index = op.removeprefix("QLinear"), 1
    else:  # a float op, or an INT8 one ORT moved to NHWC (NhwcMaxPool on uint8)
        base, index = FLOAT_FUSED.get(op, op.removeprefix("Nhwc")), 1
    weight = node.input[index] if len(node.input) > index else ""
    return op_table.class_name(base, op_table.shape_class(base, group, shapes.get(weight)))


def charges(model_path: Path) -> tuple[dict[str, str], set[str]]:
    """Node name -> the class its time is charged to, from the optimized graph ORT saved; and the classes
    with INT8 work in them (an INT8 kernel, or a Q/DQ charged to them)."""
    import onnx

    model = onnx.load(str(model_path))
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    classes = {n.name: origin(n, shapes) for n in model.graph.node}
    producer = {out: n for n in model.graph.node for out in n.output}
    consumers: dict[str, list[Any]] = defaultdict(list)
    for n in model.graph.node:
        for name in n.input:
            consumers[name].append(n)
    charged: dict[str, str] = {}
    quantized: set[str] = set()
    for n in model.graph.node:
        if classes[n.name] is not None:
            charged[n.name] = str(classes[n.name])
            if n.op_type in INT8_KERNELS or n.op_type.startswith("QLinear"):
                quantized.add(charged[n.name])
            continue
        # Q and reorders into a kernel are its input's cost; DQ and reorders out, its output's
        into = n.op_type in {"QuantizeLinear", "DynamicQuantizeLinear", "ReorderInput"}
        near = consumers.get(n.output[0], []) if into else [producer.get(n.input[0])]
        near += [producer.get(n.input[0])] if into else consumers.get(n.output[0], [])
        found = next((classes[m.name] for m in near if m is not None and classes[m.name]), None)
        charged[n.name] = str(found or n.op_type)
        if found and n.op_type in QDQ:
            quantized.add(charged[n.name])
    return charged, quantized


def session(path: Path, workdir: Path, tag: str) -> tuple[Any, Path]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(workdir / f"profile-{tag}")
    optimized = workdir / f"optimized-{tag}.onnx"
    options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]), optimized


def profiled(
    path: Path, feed: dict, workdir: Path, tag: str, runs: int
) -> tuple[dict[str, float], set[str]]:
    """Microseconds per run by class, from one profiled session of `runs` runs (after 3 warm-ups), and the
    classes with INT8 work in them."""
    sess, optimized = session(path, workdir, tag)
    for _ in range(3 + runs):
        sess.run(None, feed)
    events = json.loads(Path(sess.end_profiling()).read_text())
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    events = [e for e in events if e.get("ts", 0) >= starts[3]]  # after the 3 warm-ups
    charged, quantized = charges(optimized)
    total: dict[str, float] = defaultdict(float)
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            node = name.removesuffix("_kernel_time")
            total[charged.get(node, event.get("args", {}).get("op_name", "?"))] += event["dur"]
    return {k: v / runs for k, v in total.items()}, quantized


def feed_for(model_path: Path, recipe: dict, folder: Path) -> dict:
    """One real sample where the recipe's data is an .npz; else a sample shaped as its loader makes them
    (images at the recipe's size, token ids): op times depend on shapes, not on values."""
    import onnxruntime as ort

    data = recipe["datasets"]["calibration"]
    inputs = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).get_inputs()
    if data["loader"] == "npz":
        arrays = np.load(folder / data["with"]["path"])  # absolute paths stay absolute
        return {i.name: _sample(arrays[i.name][0], i.shape) for i in inputs if i.name in arrays}
    size = data["with"].get("size", [224, 224])
    rng = np.random.default_rng(0)
    feed = {}
    for spec in inputs:
        dims = [d if isinstance(d, int) and d > 0 else None for d in spec.shape]
        if len(dims) == 4:
            at = (2, 3) if dims[1] in (1, 3) else (1, 2)
            dims[at[0]], dims[at[1]] = dims[at[0]] or size[0], dims[at[1]] or size[1]
        shape = [d or (1 if i == 0 else 64) for i, d in enumerate(dims)]
        if "int" in spec.type:
            feed[spec.name] = rng.integers(0, 1000, shape).astype(spec.type[7:-1])
        else:
            feed[spec.name] = rng.random(shape, dtype=np.float32)
    return feed


def _sample(row: np.ndarray, shape: list) -> np.ndarray:
    """One sample of an .npz (samples along the first axis) in the input's shape: reshaped where the input's
    dims are all fixed (silero's state [2, 1, 128] from rows of [2, 128]), else given a batch axis of 1."""
    row = np.asarray(row)
    if all(isinstance(d, int) for d in shape) and row.size == int(np.prod(shape)):
        return row.reshape(shape)
    if row.ndim + 1 != len(shape):
        return row
    at = next((i for i, d in enumerate(shape) if not isinstance(d, int)), 0)
    return np.expand_dims(row, at)  # the open dim is the batch one: [2, batch, 128]


def build(
    model: corpus.CorpusModel, folder: Path, limit: int | None, auto: bool = False
) -> tuple[Path, Path, dict]:
    """The fp32 model the recipe quantizes and its QDQ model, from init's recipe (calibrate + quantize_static);
    with `auto`, also `int8_auto` (op_types_to_quantize: auto, optional) where init writes auto."""
    path = corpus.model_file(model, folder)
    recipe_path = folder / "recipe.yaml"
    step = corpus.engine(
        "init",
        ["init", str(path), "-o", str(recipe_path), *corpus.data_args(model, folder)],
        folder,
    )
    if step.code:
        raise RuntimeError(f"init: {step.said()}")
    recipe = yaml.safe_load(recipe_path.read_text())
    stages = recipe["stages"]
    int8 = next(n for n, s in stages.items() if s["uses"] == "quantize_static")
    needed = {int8} | {ref.split(".")[0] for ref in stages[int8]["in"].values()}
    needed |= {
        ref.split(".")[0] for n in list(needed) if n in stages for ref in stages[n]["in"].values()
    }
    recipe["stages"] = {n: s for n, s in stages.items() if n in needed}
    stages[int8].pop("optional", None)
    settings = stages[int8].setdefault("with", {})
    if settings.get("op_types_to_quantize") == op_table.AUTO:  # the table measures whole-model INT8
        settings["op_types_to_quantize"] = []
        if auto:
            with_auto = {**settings, "op_types_to_quantize": op_table.AUTO}
            recipe["stages"]["int8_auto"] = {**stages[int8], "with": with_auto, "optional": True}
    if limit:
        for data in recipe["datasets"].values():
            data["with"]["limit"] = min(limit, data["with"].get("limit", limit))
    recipe_path.write_text(yaml.safe_dump(recipe))
    step = corpus.engine("run", ["run", str(recipe_path)], folder)
    if step.code:
        raise RuntimeError(f"run: {step.said()}")
    source, out = stages[int8]["in"]["model"], folder / "out" / recipe["name"]
    fp32 = path if source == "inputs.model" else out / source.split(".")[0] / "model.onnx"
    return fp32, out / int8 / "model.onnx", recipe


def p50_ms(paths: dict[str, Path], feed: dict, rounds: int, runs: int) -> dict[str, list[float]]:
    """Each model's p50 of `runs` runs per round (ORT's default threads, as the benchmark stage), interleaved."""
    import onnxruntime as ort

    sessions = {
        k: ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
        for k, p in paths.items()
    }
    times: dict[str, list[float]] = {k: [] for k in sessions}
    for _ in range(rounds):
        for k, sess in sessions.items():
            for _ in range(5):
                sess.run(None, feed)
            laps = []
            for _ in range(runs):
                started = time.perf_counter()
                sess.run(None, feed)
                laps.append((time.perf_counter() - started) * 1000)
            times[k].append(statistics.median(laps))
    return times


def effect(model: corpus.CorpusModel, rounds: int, runs: int, limit: int | None) -> dict[str, Any]:
    """fp32, whole-model INT8 and `auto` INT8 of init's recipe, timed interleaved: the table's effect. Each
    speedup is [median, lowest, highest] of the per-round ratios."""
    with tempfile.TemporaryDirectory(prefix=f"optable-{model.id}-") as name:
        folder = Path(name)
        fp32, int8, recipe = build(model, folder, limit, auto=True)
        paths = {"fp32": fp32, "int8": int8}
        auto = int8.parent.parent / "int8_auto" / "model.onnx"
        same = auto.exists() and auto.read_bytes() == int8.read_bytes()
        paths.update({"auto": auto} if auto.exists() and not same else {})
        times = p50_ms(paths, feed_for(fp32, recipe, folder), rounds, runs)
    found = {k: round(statistics.median(v), 3) for k, v in times.items()}
    auto_key = "auto" if "auto" in found else "int8" if same else None
    return {
        "p50_ms": found,
        "int8_speedup": _ratio(times, "int8"),
        "auto_speedup": _ratio(times, auto_key) if auto_key else None,
        "load_1min": round(os.getloadavg()[0], 1),
        "auto": "the same bytes as int8"
        if same
        else "built"
        if "auto" in found
        else (
            "refused: fp32 kept"
            if "int8_auto" in recipe["stages"]
            else "init keeps its own op types"
        ),
    }


def _ratio(times: dict[str, list[float]], key: str) -> list[float]:
    """fp32's p50 over `key`'s: the median of the per-round ratios (each round times both under the same
    load), then the lowest and the highest: [median, low, high]."""
    ratios = [f / q for f, q in zip(times["fp32"], times[key])]
    return [round(statistics.median(ratios), 2), round(min(ratios), 2), round(max(ratios), 2)]


def measure(model: corpus.CorpusModel, rounds: int, runs: int, limit: int | None) -> dict[str, Any]:
    """Per class: the float and INT8 microseconds of each round, fp32 and INT8 interleaved."""
    with tempfile.TemporaryDirectory(prefix=f"optable-{model.id}-") as name:
        folder = Path(name)
        fp32, int8, recipe = build(model, folder, limit)
        feed = feed_for(fp32, recipe, folder)
        per_round, quantized = [], set()
        for r in range(rounds):
            float_us, _ = profiled(fp32, feed, folder, f"f{r}", runs)
            int8_us, quantized = profiled(int8, feed, folder, f"q{r}", runs)
            per_round.append((float_us, int8_us))
    return {
        c: {
            "float_us": [round(f.get(c, 0.0), 2) for f, _ in per_round],
            "int8_us": [round(q.get(c, 0.0), 2) for _, q in per_round],
        }
        for c in sorted(quantized)
    }


def verdicts(measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per class over the models: median float and INT8 time summed over models, faster or not, and the
    spread of the per-round ratio. Only classes with INT8 work in them (time on the INT8 side that the
    Only classes with INT8 work in them (an INT8 kernel, or Q/DQ around them) are measured."""
    rows: dict[str, Any] = {}
    names = sorted({c for per_model in measured.values() for c in per_model})
    for c in names:
        used = {m: per[c] for m, per in measured.items() if c in per}
        n = min(len(v["float_us"]) for v in used.values())
        float_r = [sum(v["float_us"][i] for v in used.values()) for i in range(n)]
        int8_r = [sum(v["int8_us"][i] for v in used.values()) for i in range(n)]
        ratios = [f / q for f, q in zip(float_r, int8_r) if q > 0]
        mid_f, mid_q = statistics.median(float_r), statistics.median(int8_r)
        rows[c] = {
            "faster": mid_q < mid_f,
            "float_us": round(mid_f, 1),
            "int8_us": round(mid_q, 1),
            "speedup": round(mid_f / mid_q, 3) if mid_q > 0 else None,
            "spread": [round(min(ratios), 3), round(max(ratios), 3)] if ratios else None,
            "models": sorted(used),
        }
    return rows


def main(argv: list[str]) -> int:
    import argparse

    import onnxruntime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--write", action="store_true", help="keep the result in the repository's table"
    )
    parser.add_argument(
        "--effect", action="store_true", help="time fp32, INT8 and auto INT8 per model"
    )
    parser.add_argument("models", nargs="*")
    args = parser.parse_args(argv)
    chosen = args.models or (QUICK_MODELS if args.quick else MODELS)
    rounds, runs, limit = (1, 3, 4) if args.quick else (args.rounds, RUNS, None)
    manifest = {m.id: m for m in corpus.load_manifest().models}
    measured: dict[str, Any] = {}
    if args.effect:
        for mid in chosen:
            try:
                print(mid, json.dumps(effect(manifest[mid], rounds, runs * 2, limit)), flush=True)
            except Exception as error:  # noqa: BLE001 boundary: one model (ORT's errors too) never stops the rest
                print(f"{mid}: not measured: {error}", flush=True)
        return 0
    for mid in chosen:
        started = time.perf_counter()
        try:
            measured[mid] = measure(manifest[mid], rounds, runs, limit)
        except Exception as error:  # noqa: BLE001 boundary: one model (ORT's errors too) never stops the rest
            print(f"{mid}: not measured: {error}", file=sys.stderr)
            continue
        print(f"{mid}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    isa = fact("isa")
    rows = verdicts(measured)
    entry = {
        "host": corpus.host(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "onnxruntime": onnxruntime.__version__,
        "method": f"{rounds} rounds of {runs} profiled runs each, fp32 and INT8 interleaved, 1 thread; medians",
        "classes": rows,
        "per_model": measured,
    }
    print(f"{isa}: class | float us | int8 us | speedup | spread | faster")
    for c, row in rows.items():
        print(
            f"{c} | {row['float_us']} | {row['int8_us']} | {row['speedup']}x | {row['spread']} | {row['faster']}"
        )
    if args.write and not args.quick:
        data = json.loads(op_table.TABLE_PATH.read_text()) if op_table.TABLE_PATH.exists() else {}
        data.setdefault("families", {})[op_table.family_of(isa)] = entry
        op_table.TABLE_PATH.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"written: {op_table.TABLE_PATH} ({isa})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
