"""benchmark: time several models side by side, interleaved, on the same feeds, in ONNX Runtime sessions."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ortflow.api import (
    ArtifactKind,
    Axis,
    BenchmarkResults,
    BenchmarkRow,
    Better,
    Declares,
    Distribution,
    Json,
    Latency,
    Measure,
    Placement,
    Port,
    Profile,
    ReportSection,
    Stage,
    StageContext,
    StageError,
    StageResult,
    Table,
    Tables,
    batched,
    model_inputs,
    with_speedups,
    write_document,
)
from ortflow.api import environment_facts as facts
from ortflow.api import onnx as onnx_model
from ortflow.api.providers import for_session, resolve
from ortflow.api.providers import names as provider_names
from ortflow.stages.measurement.machine_load import LoadWatch

LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
PERCENTILES = (50, 90, 95, 99)
SETTLE_RUNS = 3  # untimed runs each time a model takes its turn in a round


class Benchmark(Stage):
    type = "benchmark"
    version = "1"
    exclusive = True  # nothing else runs while it measures
    deterministic = False  # timings differ run to run: no "not reproducible" warning
    description = (
        "Time each model on the same feeds in ONNX Runtime sessions, interleaved in rounds so that machine "
        "noise hits every model alike: latency mean/percentiles/min/max, throughput, speedup against a "
        "baseline, session creation time, peak memory of a process serving the model, model size, and the providers ORT really "
        "used. Lists (intra_op_threads, batch_size) sweep. Results depend on the machine: the cache key holds "
        "the CPU, GPU and ORT build."
    )
    inputs = (
        Port(
            "models",
            ArtifactKind.ONNX_MODEL,
            "the models to compare (the first is the baseline)",
            many=True,
        ),
        Port("data", ArtifactKind.DATASET, "the feeds to time them on"),
    )
    outputs = (
        Port(
            "results",
            ArtifactKind.METRICS,
            "every measurement and the comparison table",
            filename="benchmark.json",
        ),
    )
    declares = Declares(
        measures=(
            Measure("p50_ms", Better.LOWER, "ms"),
            Measure(
                "speedup", Better.HIGHER, "x", plot=Axis.SPEED, title="speedup vs baseline (p50)"
            ),
        ),
        tables=(
            Tables("Top operators", terminal=False),
        ),  # one per model: in the report files, too long for a terminal
        distributions=(Distribution("Latency per run", "latency per run", "ms"),),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "providers": {
                "type": "array",
                "minItems": 1,
                "default": ["CPUExecutionProvider"],
                "items": {
                    "oneOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "options": {"type": "object"},
                            },
                            "additionalProperties": False,
                        },
                    ]
                },
                "description": "execution providers in order, each a name or {name, options}",
            },
            "optimization_level": {
                "enum": list(LEVELS),
                "default": "all",
                "description": "the session's graph optimization level (ORT's default is all)",
            },
            "intra_op_threads": {
                "oneOf": [
                    {"type": "integer", "minimum": 0},
                    {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
                ],
                "default": 0,
                "description": "threads per op (0: ORT's default); a list sweeps",
            },
            "inter_op_threads": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "threads across ops (0: default)",
            },
            "execution_mode": {"enum": ["sequential", "parallel"], "default": "sequential"},
            "batch_size": {
                "oneOf": [
                    {"type": "integer", "minimum": 1},
                    {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
                ],
                "default": 1,
                "description": "samples per run; a list sweeps",
            },
            "sequence_length": {
                "oneOf": [
                    {"type": "integer", "minimum": 1},
                    {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
                ],
                "description": "cut or zero-pad every input's axis 1 to this length (token models); a list sweeps",
            },
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 16,
                "description": "distinct feeds cycled through",
            },
            "warmup": {
                "type": "integer",
                "minimum": 0,
                "default": 10,
                "description": "untimed runs per model first",
            },
            "runs": {
                "type": "integer",
                "minimum": 1,
                "default": 100,
                "description": "timed runs per model and config",
            },
            "seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "a time budget per model and config instead of a run count",
            },
            "io_binding": {
                "oneOf": [
                    {"type": "boolean"},
                    {"type": "array", "items": {"type": "boolean"}, "minItems": 1},
                ],
                "default": False,
                "description": "feed and fetch through IO binding with tensors already on the provider's "
                "device (CUDA: inputs and outputs stay on the GPU), so copies are not timed; "
                "[false, true] measures both",
            },
            "rounds": {
                "type": "integer",
                "minimum": 1,
                "default": 5,
                "description": "the runs are split into this many rounds, models alternating",
            },
            "baseline": {
                "type": "string",
                "description": "the model speedups are relative to (default: the first)",
            },
            "note": {
                "type": "string",
                "default": "",
                "description": "free text kept with the results; a new note measures again instead of using the cache",
            },
            "peak_memory": {
                "type": "boolean",
                "description": "measure each model's peak memory in a separate process (default true)",
            },
            "profile": {
                "type": "boolean",
                "default": False,
                "description": "also profile each model (untimed pass) and report the top operators",
            },
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        if "seconds" not in params and params["runs"] < params["rounds"]:
            return [f"runs ({params['runs']}) must be at least rounds ({params['rounds']})"]
        return []

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "cpu", "isa", "gpu", "providers", "python")

    def run(self, ctx: StageContext) -> StageResult:
        import numpy as np

        params = ctx.params
        models = [onnx_model.model_file(p) for p in ctx.paths("models")]
        names = ctx.labels("models")
        baseline = params.get("baseline") or names[0]
        if baseline not in names:
            raise StageError(f"baseline '{baseline}' is not one of the models ({', '.join(names)})")
        inputs = model_inputs(models[0])
        for name, path in zip(names, models):
            if _signature(model_inputs(path)) != _signature(inputs):
                raise StageError(
                    f"model {name} takes other inputs than {names[0]} — models compared on the same feeds "
                    "must share their inputs' names, dtypes and ranks (an fp16 model needs keep_io_types)"
                )
        feeds = list(ctx.dataset("data").feeds(inputs, limit=params["samples"]))
        axes = ctx.dataset("data").batch_axes
        results: list[BenchmarkRow] = []
        watch = LoadWatch()
        settings = list(
            itertools.product(
                _as_list(params["intra_op_threads"]),
                _as_list(params.get("sequence_length")),
                _as_list(params["batch_size"]),
                _as_list(params["io_binding"]),
            )
        )
        for done, (thread_count, length, batch_size, bound) in enumerate(settings, start=1):
            shaped = _full_batches(
                [_with_length(f, length, inputs) for f in feeds], batch_size, axes
            )
            for row in self._measure(
                models, names, shaped, thread_count, batch_size, {**params, "io_binding": bound}
            ):
                results.append(replace(row, sequence_length=length, io_binding=bound))
            ctx.progress(done, len(settings), f"settings timed ({len(models)} models each)")
        # from the unrounded medians: rounding first could make two tiny models look equal
        results = with_speedups(
            results,
            baseline,
            lambda base, row: round(
                float(np.median(base.latencies_ms) / np.median(row.latencies_ms)), 3
            ),
        )
        # Profiled under the first configuration of the sweep, with the same providers, options and threads.
        first_feeds = _full_batches(
            [_with_length(f, _as_list(params.get("sequence_length"))[0], inputs) for f in feeds],
            _as_list(params["batch_size"])[0],
            axes,
        )
        threads = _as_list(params["intra_op_threads"])[0]
        # On a GPU provider the profile pass always runs: it is what shows nodes falling back to the CPU.
        on_device = provider_names(params["providers"])[0] != "CPUExecutionProvider"
        profiles = (
            {
                n: _profile(m, first_feeds, params, threads, ctx.scratch)
                for n, m in zip(names, models)
            }
            if params["profile"] or on_device
            else {}
        )
        load = watch.finish()
        document = BenchmarkResults(
            baseline,
            params["note"],
            load,
            facts(("cpu", "isa", "gpu", "onnxruntime", "platform")),
            results,
            profiles,
            _report(results, profiles, baseline),
        )
        write_document(ctx.output_path("results"), document)
        best = min(results, key=lambda r: r.latency_ms.p50)
        summary = (
            f"fastest {best.model}: {best.latency_ms.p50:.3g} ms p50, {best.speedup:.2f}x vs {baseline}"
            f" (threads {best.intra_op_threads or 'default'}, batch {best.batch_size})"
        )
        if LoadWatch.warning(load):
            summary += f"; {LoadWatch.warning(load)}"
            ctx.log(f"{ctx.stage_name}: warning: {LoadWatch.warning(load)}")
        first = [
            r for r in results if r.config() == results[0].config()
        ]  # one value per model: the first config
        return StageResult(
            summary=summary,
            metrics={
                "p50_ms": {r.model: r.latency_ms.p50 for r in first},
                "speedup": {r.model: r.speedup for r in first},
                **(
                    {
                        "fallback_nodes": {
                            n: p["placement"]["fallback_nodes"] for n, p in profiles.items()
                        }
                    }
                    if profiles
                    else {}
                ),
                "configs": len(results) // len(models),
            },
        )

    def _measure(
        self,
        models: list[Path],
        names: list[str],
        feeds: list[dict],
        threads: int,
        batch_size: int,
        params: dict[str, Any],
    ) -> list[BenchmarkRow]:
        sessions, rows = [], []
        for name, path in zip(names, models):
            started = time.perf_counter()
            session = _session(path, params, threads)
            created = time.perf_counter() - started
            call = _caller(session, feeds, params)
            for i in range(params["warmup"]):
                call(i)
            sessions.append(call)
            rows.append(
                {
                    "model": name,
                    "intra_op_threads": threads,
                    "batch_size": batch_size,
                    "providers_used": session.get_providers(),
                    "session_create_s": round(created, 3),
                    "peak_rss_mb": _peak_memory_mb(path, params, threads, feeds[0])
                    if params.get("peak_memory", True)
                    else None,
                    "size_mb": round(onnx_model.total_size(path) / 1e6, 2),
                    "latencies_ms": [],
                }
            )
        per_round = params["runs"] // params["rounds"]
        budget = params["seconds"] / params["rounds"] if "seconds" in params else None
        counters = [0] * len(models)  # each model walks the feeds in the same order
        for round_index in range(params["rounds"]):
            order = list(range(len(models)))
            order = (
                order[round_index % len(order) :] + order[: round_index % len(order)]
            )  # rotate who goes first
            for index in order:
                call, timings = sessions[index], rows[index]["latencies_ms"]  # type: ignore[index]
                for _ in range(
                    SETTLE_RUNS
                ):  # the previous model's spinning thread pool must wind down first
                    call(counters[index])
                turn_started = time.perf_counter()
                done = 0
                while not _turn_over(done, per_round, budget, turn_started):
                    started = time.perf_counter()
                    call(counters[index])
                    timings.append((time.perf_counter() - started) * 1000)
                    counters[index] += 1
                    done += 1
        return [_row(row, batch_size) for row in rows]


def _row(measured: dict[str, Any], batch_size: int) -> BenchmarkRow:
    """A model's row from its timings: the latency statistics rounded to the microsecond."""
    import numpy as np

    latencies = np.asarray(measured["latencies_ms"])
    stats = {
        "mean": latencies.mean(),
        "min": latencies.min(),
        "max": latencies.max(),
        **{f"p{q}": np.percentile(latencies, q) for q in PERCENTILES},
    }
    return BenchmarkRow(
        **measured,
        latency_ms=Latency(**{k: round(float(v), 3) for k, v in stats.items()}),
        throughput_per_s=round(batch_size * 1000 / float(latencies.mean()), 2),
        runs=len(latencies),
    )


def _turn_over(done: int, runs: int, budget: float | None, started: float) -> bool:
    """A model's turn in a round ends after its share of the runs, or of the time budget (at least one run)."""
    if budget is None:
        return done >= runs
    return done > 0 and time.perf_counter() - started >= budget


def _caller(session: Any, feeds: list[dict], params: dict[str, Any]) -> Any:
    """A function running feed i: plain session.run, or run_with_iobinding with every feed bound up front on
    the provider's device, so the timed call does no host-device copies."""
    if not params["io_binding"]:
        return lambda i: session.run(None, feeds[i % len(feeds)])
    import onnxruntime as ort

    first = params["providers"][0]
    on_gpu = session.get_providers()[0] in ("CUDAExecutionProvider", "TensorrtExecutionProvider")
    device = "cuda" if on_gpu else "cpu"
    device_id = (
        int((first.get("options") or {}).get("device_id", 0))
        if isinstance(first, dict) and on_gpu
        else 0
    )
    bindings = []
    for feed in feeds:
        binding = session.io_binding()
        for name, array in feed.items():
            binding.bind_ortvalue_input(
                name, ort.OrtValue.ortvalue_from_numpy(array, device, device_id)
            )
        for output in session.get_outputs():
            binding.bind_output(output.name, device, device_id)
        bindings.append(binding)
    return lambda i: session.run_with_iobinding(bindings[i % len(bindings)])


def _signature(inputs: list[Any]) -> dict[str, tuple[str, int]]:
    """What models run on the same feeds must share: input names, dtypes and ranks (not their order, nor the
    names of symbolic dimensions)."""
    return {i.name: (i.dtype, len(i.shape)) for i in inputs}


def _full_batches(feeds: list[dict], batch_size: int, axes: dict[str, int | None]) -> list[dict]:
    """Batches of exactly `batch_size` samples: feeds are repeated when there are too few, and a leftover
    partial batch is dropped (timing it as a full one would overstate throughput)."""
    repeated = feeds * -(-batch_size // len(feeds))  # at least one full batch
    usable = len(repeated) - len(repeated) % batch_size
    return list(batched(repeated[:usable], batch_size, axes))


def _with_length(feed: dict, length: int | None, inputs: list[Any]) -> dict:
    """The feed with axis 1 of each input cut or zero-padded to `length` (None: unchanged)."""
    import numpy as np

    if length is None:
        return feed
    shaped = {}
    for spec in inputs:
        array = feed[spec.name]
        if array.ndim < 2:
            shaped[spec.name] = array
            continue
        if isinstance(spec.shape[1], int) and spec.shape[1] > 0 and spec.shape[1] != length:
            raise StageError(
                f"input '{spec.name}' fixes axis 1 at {spec.shape[1]}: sequence_length {length} cannot apply"
            )
        if array.shape[1] >= length:
            shaped[spec.name] = np.ascontiguousarray(array[:, :length])
        else:
            padding = [(0, 0), (0, length - array.shape[1])] + [(0, 0)] * (array.ndim - 2)
            shaped[spec.name] = np.pad(array, padding)
    return shaped


def _session(
    path: Path, params: dict[str, Any], threads: int, profile_prefix: str | None = None
) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    options.graph_optimization_level = getattr(
        ort.GraphOptimizationLevel, LEVELS[params["optimization_level"]]
    )
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = params["inter_op_threads"]
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL
        if params["execution_mode"] == "parallel"
        else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    options.log_severity_level = 3
    resolve(params["providers"]).require("this benchmark")
    session = onnx_model.load_for_ort(path, options, for_session(params["providers"]))
    used = session.get_providers()
    missing = [n for n in provider_names(params["providers"]) if n not in used]
    if missing:  # the GPU wheel lists providers it cannot load; the session tells the truth
        raise StageError(
            f"ONNX Runtime could not use {', '.join(missing)} for {path.name} (it used {', '.join(used)})"
            " — install the provider's libraries or remove it from `providers`"
        )
    return session


def _profile(
    path: Path, feeds: list[dict], params: dict[str, Any], threads: int, workdir: Path
) -> Profile:
    """Time share by op type, the slowest nodes, and where each node ran, from ORT's profiler (a separate,
    untimed pass)."""
    from ortflow.stages.measurement.placement import node_placement, summary

    session = _session(path, params, threads, profile_prefix=str(workdir / f"profile-{path.stem}"))
    for feed in list(feeds)[:20]:
        session.run(None, feed)
    profile = Path(session.end_profiling())
    events = json.loads(profile.read_text())
    by_type: dict[str, float] = {}
    by_node: dict[str, float] = {}
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            op_type = event.get("args", {}).get("op_name", "?")
            by_type[op_type] = by_type.get(op_type, 0) + event["dur"]
            node = event["name"].removesuffix("_kernel_time")
            by_node[f"{node} ({op_type})"] = by_node.get(f"{node} ({op_type})", 0) + event["dur"]
    total = sum(by_type.values()) or 1

    def top(d: dict[str, float]) -> list[list[object]]:
        return [
            [k, round(100 * v / total, 1)] for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:10]
        ]

    placement: Placement = summary(node_placement(profile), session.get_providers()[0])  # type: ignore[assignment]
    return {"op_types_percent": top(by_type), "nodes_percent": top(by_node), "placement": placement}


def _report(
    results: list[BenchmarkRow], profiles: dict[str, Profile], baseline: str
) -> ReportSection:
    columns = [
        "model",
        "threads",
        "batch",
        "length",
        "IO binding",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "mean ms",
        "throughput/s",
        f"vs {baseline}",
        "size MB",
        "peak MB",
        "providers",
    ]
    rows: list[list[Json]] = [
        [
            r.model,
            r.intra_op_threads or "default",
            r.batch_size,
            r.sequence_length or "data",
            "yes" if r.io_binding else "no",
            r.latency_ms.p50,
            r.latency_ms.p90,
            r.latency_ms.p99,
            r.latency_ms.mean,
            r.throughput_per_s,
            f"{r.speedup:.2f}x",
            r.size_mb,
            r.peak_rss_mb if r.peak_rss_mb is not None else "not measured",
            ",".join(p.removesuffix("ExecutionProvider") for p in r.providers_used),
        ]
        for r in results
    ]
    tables: list[Table] = [{"title": "Latency", "columns": columns, "rows": rows}]
    for model, profile in profiles.items():
        tables.append(
            {
                "title": f"Top operators: {model}",
                "columns": ["op type", "% of time"],
                "rows": profile["op_types_percent"],
            }
        )
    if profiles:
        tables.append(
            {
                "title": "Node placement (nodes not on the first provider fall back, with copies around them)",
                "columns": ["model", "requested", "nodes by provider", "fallback nodes", "e.g."],
                "rows": [
                    [
                        m,
                        p["placement"]["requested"],
                        ", ".join(
                            f"{k.removesuffix('ExecutionProvider')} {v}"
                            for k, v in p["placement"]["nodes_by_provider"].items()
                        ),
                        p["placement"]["fallback_nodes"],
                        ", ".join(p["placement"]["fallback_examples"][:3]),
                    ]
                    for m, p in profiles.items()
                ],
            }
        )
    swept = len({r.config() for r in results}) > 1
    series: dict[str, Json] = {
        (
            f"{r.model} (threads {r.intra_op_threads or 'default'}, batch {r.batch_size}, "
            f"length {r.sequence_length or 'data'}{', IO binding' if r.io_binding else ''})"
            if swept
            else r.model
        ): list(r.latencies_ms)
        for r in results
    }
    return {
        "tables": tables,
        "charts": [{"kind": "distribution", "title": "Latency per run (ms)", "series": series}],
    }


PEAK_MEMORY_SCRIPT = """
import pickle, sys
import onnxruntime as ort
path, providers, level, threads, feed = pickle.load(sys.stdin.buffer)
options = ort.SessionOptions()
options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
options.intra_op_num_threads = threads
options.log_severity_level = 3
session = ort.InferenceSession(path, sess_options=options, providers=providers)
for _ in range(3):
    session.run(None, feed)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would report the (large) parent's peak
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def _peak_memory_mb(path: Path, params: dict[str, Any], threads: int, feed: dict) -> float | None:
    """Peak resident memory of a fresh process that loads the model and runs it: models timed in one
    process share its memory, so only a process of its own says what serving a model costs."""
    import pickle
    import subprocess
    import sys

    payload = pickle.dumps(
        (
            str(path),
            for_session(params["providers"]),
            LEVELS[params["optimization_level"]],
            threads,
            feed,
        )
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", PEAK_MEMORY_SCRIPT],
            input=payload,
            capture_output=True,
            timeout=600,
            check=True,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    return round(int(done.stdout.split()[-1]) / 1024, 1)  # VmHWM is in kB


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
