"""benchmark: time several models side by side, interleaved, on the same feeds, in ONNX Runtime sessions."""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ortflow.api import (
    ArtifactKind,
    Axis,
    Better,
    Declares,
    Distribution,
    Json,
    Measure,
    Port,
    ProviderUnavailable,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    Tables,
    counted,
    feeds_fit,
    feeds_for,
    model_inputs,
)
from ortflow.api import environment_facts as facts
from ortflow.api import onnx as onnx_model
from ortflow.api.providers import names as provider_names
from ortflow.api.providers import uses_cuda
from ortflow.stages.measurement.benchmark_params import PARAMS_SCHEMA
from ortflow.stages.measurement.benchmark_report import benchmark_report
from ortflow.stages.measurement.benchmark_settings import BenchmarkSettings, SessionConfig, swept
from ortflow.stages.measurement.cuda_graph import require_capturable, session_settings
from ortflow.stages.measurement.feeds import full_batches
from ortflow.stages.measurement.feeds import (
    with_length as _with_length,  # tests import it from here
)
from ortflow.stages.measurement.machine_load import LoadWatch
from ortflow.stages.measurement.profiles import profile
from ortflow.stages.measurement.sessions import timed_session
from ortflow.stages.measurement.timing_rows import Timing

if TYPE_CHECKING:  # the result documents are imported when the stage runs (engine plan stays light)
    from ortflow.api import BenchmarkRow, Profile

SETTLE_RUNS = 3  # untimed runs each time a model takes its turn in a round


class Benchmark(SettingsStage[BenchmarkSettings]):
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
        tables=(  # in the report files only: one per model, or lines too long for a terminal
            Tables("Top operators", terminal=False),
            Tables("Session settings", terminal=False),
        ),
        distributions=(Distribution("Latency per run", "latency per run", "ms"),),
    )
    params_schema = PARAMS_SCHEMA

    settings = BenchmarkSettings

    def problems(self, settings: BenchmarkSettings) -> list[str]:
        if settings.seconds is None and settings.runs < settings.rounds:
            return [f"runs ({settings.runs}) must be at least rounds ({settings.rounds})"]
        graphs, bindings = swept(settings.cuda_graph), swept(settings.io_binding)
        if True in graphs and True not in bindings:
            return [
                "cuda_graph: true replays buffers bound once on the GPU — set io_binding: true (or [false, true])"
            ]
        return []

    def facts(self, settings: BenchmarkSettings) -> tuple[str, ...]:
        # timings on CUDA depend on the provider's build (in-tree or plugin EP, CUDA and cuDNN majors)
        providers = list(settings.providers)
        on_cuda = ("cuda_provider",) if uses_cuda(providers) else ()
        return ("onnxruntime", "cpu", "isa", "gpu", "providers", "python", *on_cuda)

    def run(self, ctx: StageContext) -> StageResult:
        from ortflow.api import (
            BenchmarkResults,
            with_speedups,
            write_document,
        )  # documents: when run

        params = self.read(ctx)
        models = [onnx_model.model_file(p) for p in ctx.paths("models")]
        names = ctx.labels("models")
        baseline = params.baseline or names[0]
        if baseline not in names:
            raise StageError(f"baseline '{baseline}' is not one of the models ({', '.join(names)})")
        work = _Workload.of(ctx, models, names)
        watch = LoadWatch()
        # from the unrounded medians: rounding first could make two tiny models look equal
        timed, skipped = self._sweep(ctx, params, work)
        results = with_speedups(timed, baseline, _median_speedup)
        profiles = _profiles(work, params, ctx.scratch)
        load = watch.finish()
        document = BenchmarkResults(
            baseline,
            params.note,
            load,
            facts(("cpu", "isa", "gpu", "onnxruntime", "platform")),
            results,
            profiles,
            benchmark_report(results, profiles, baseline, skipped),
            tuple(skipped),
        )
        write_document(ctx.output_path("results"), document)
        best = min(results, key=lambda r: r.latency_ms.p50)
        summary = (
            f"fastest {best.model}: {best.latency_ms.p50:.3g} ms p50, {best.speedup:.2f}x vs {baseline}"
            f" (threads {best.intra_op_threads or 'default'}, batch {best.batch_size}"
            f"{', CUDA graph' if best.cuda_graph else ''})"
        )
        if skipped:
            summary += f"; not timed: {skipped[0]}" + (
                f" (+{len(skipped) - 1} more)" if len(skipped) > 1 else ""
            )
        if LoadWatch.warning(load):
            summary += f"; {LoadWatch.warning(load)}"
            ctx.log(f"{ctx.stage_name}: warning: {LoadWatch.warning(load)}")
        return StageResult(summary=summary, metrics=_metrics(results, profiles, len(work.models)))

    def _sweep(
        self, ctx: StageContext, params: BenchmarkSettings, work: _Workload
    ) -> tuple[list[BenchmarkRow], list[str]]:
        """Every model timed under every combination of the swept settings, a row per model and setting, and the
        combinations left untimed with why (a CUDA graph that cannot be captured); when none could be timed, the
        first reason is raised (ProviderUnavailable: an optional stage skips)."""
        results: list[BenchmarkRow] = []
        skipped: list[str] = []
        settings = [
            combination
            for combination in itertools.product(
                swept(params.intra_op_threads),
                swept(params.sequence_length),
                swept(params.batch_size),
                swept(params.io_binding),
                swept(params.cuda_graph),
            )
            if combination[3] or not combination[4]  # a CUDA graph needs IO binding
        ]
        for done, (thread_count, length, batch_size, bound, graph) in enumerate(settings, start=1):
            shaped = work.batches(length, batch_size)
            config = SessionConfig.of(params, io_binding=bound, cuda_graph=graph)
            refused: list[str] = []
            try:
                if graph:
                    require_capturable(list(params.providers), shaped)
                rows = self._measure(
                    work.models,
                    work.names,
                    shaped,
                    thread_count,
                    batch_size,
                    params,
                    config,
                    refused,
                )
            except ProviderUnavailable as exc:
                if not graph:
                    raise
                refused = [str(exc)]
                rows = []
            where = f"cuda_graph at batch {batch_size}, sequence {length or 'as fed'}"
            skipped += [f"{where}: {reason}" for reason in refused]
            session = session_settings(config, thread_count)
            results += [
                replace(
                    r, sequence_length=length, io_binding=bound, cuda_graph=graph, session=session
                )
                for r in rows
            ]
            ctx.progress(
                done, len(settings), f"settings timed ({counted(len(work.models), 'model')} each)"
            )
        if not results:
            raise ProviderUnavailable(skipped[0].split(": ", 1)[1])
        return results, skipped

    def _measure(
        self,
        models: list[Path],
        names: list[str],
        feeds: list[dict],
        threads: int,
        batch_size: int,
        params: BenchmarkSettings,
        config: SessionConfig,
        refused: list[str] | None = None,
    ) -> list[BenchmarkRow]:
        """`refused` collects the models no CUDA graph could be captured for (left out of this configuration)."""
        sessions: list[Callable[[int], Any]] = []
        rows: list[Timing] = []
        for name, path in zip(names, models):
            own = feeds_for(path, feeds)  # less the inputs a specialized model froze
            try:
                session, created, call = timed_session(path, config, threads, own)
            except ProviderUnavailable as exc:
                if refused is None or not config.cuda_graph:
                    raise
                refused.append(f"{name}: {exc}")
                continue
            for i in range(params.warmup):
                call(i)
            sessions.append(call)
            rows.append(
                Timing.started(
                    name,
                    path,
                    session,
                    created,
                    threads,
                    batch_size,
                    config,
                    own[0],
                    params.peak_memory,
                )
            )
        if not rows:
            raise ProviderUnavailable("; ".join(refused or []))
        _timed_rounds(sessions, rows, params)
        return [row.row() for row in rows]


def _timed_rounds(
    sessions: list[Callable[[int], Any]], rows: list[Timing], params: BenchmarkSettings
) -> None:
    """Each model timed in turn, round after round (who goes first rotates), into its row: its share of the
    runs or of the time budget per turn, after a few untimed runs that let the previous model's threads settle."""
    per_round = params.runs // params.rounds
    budget = params.seconds / params.rounds if params.seconds is not None else None
    counters = [0] * len(rows)  # each model walks the feeds in the same order
    for round_index in range(params.rounds):
        order = list(range(len(rows)))
        order = (
            order[round_index % len(order) :] + order[: round_index % len(order)]
        )  # rotate who goes first
        for index in order:
            call, timings = sessions[index], rows[index].latencies_ms
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
            rows[index].round_p50_ms.append(round(statistics.median(timings[-done:]), 4))


@dataclass(frozen=True)
class _Workload:
    """The models to time, by label, and the feeds they all run on."""

    models: list[Path]
    names: list[str]
    inputs: list[Any]  # the first model's, which every model must share
    feeds: list[dict]
    axes: dict[str, int | None]  # each input's batch axis

    @classmethod
    def of(cls, ctx: StageContext, models: list[Path], names: list[str]) -> _Workload:
        """The models must share their inputs, since all run on the same feeds."""
        inputs = model_inputs(models[0])
        for name, path in zip(names, models):
            if not feeds_fit(model_inputs(path), inputs):
                raise StageError(
                    f"model {name} takes other inputs than {names[0]} — models compared on the same feeds "
                    "must share their inputs' names, dtypes and ranks (an fp16 model needs keep_io_types; a "
                    "specialized model may lack the inputs it was specialized for)"
                )
        samples = ctx.settings(BenchmarkSettings).samples
        feeds = list(ctx.dataset("data").feeds(inputs, limit=samples))
        return cls(models, names, inputs, feeds, ctx.dataset("data").batch_axes)

    def batches(self, length: int | None, batch_size: int) -> list[dict]:
        """The feeds at one sequence length (None: their own), in full batches of `batch_size`."""
        return full_batches(
            [_with_length(f, length, self.inputs) for f in self.feeds], batch_size, self.axes
        )


def _median_speedup(base: BenchmarkRow, row: BenchmarkRow) -> float:
    import numpy as np

    return round(float(np.median(base.latencies_ms) / np.median(row.latencies_ms)), 3)


def _profiles(work: _Workload, params: BenchmarkSettings, scratch: Path) -> dict[str, Profile]:
    """Each model profiled under the first configuration of the sweep, with the same providers, options and
    threads; only when asked, except on a GPU provider, where the profile pass always runs: it is what shows
    nodes falling back to the CPU."""
    first_feeds = work.batches(swept(params.sequence_length)[0], swept(params.batch_size)[0])
    threads = swept(params.intra_op_threads)[0]
    on_device = provider_names(list(params.providers))[0] != "CPUExecutionProvider"
    if not (params.profile or on_device):
        return {}
    return {
        n: profile(m, feeds_for(m, first_feeds), SessionConfig.of(params), threads, scratch)
        for n, m in zip(work.names, work.models)
    }


def _metrics(
    results: list[BenchmarkRow], profiles: dict[str, Profile], models: int
) -> dict[str, Json]:
    """One value per model, from the first configuration of the sweep; nodes falling back when profiled."""
    first = [r for r in results if r.config() == results[0].config()]
    return {
        "p50_ms": {r.model: r.latency_ms.p50 for r in first},
        "speedup": {r.model: r.speedup for r in first},
        **(
            {"fallback_nodes": {n: p["placement"]["fallback_nodes"] for n, p in profiles.items()}}
            if profiles
            else {}
        ),
        "configs": len(results) // models,
    }


def _turn_over(done: int, runs: int, budget: float | None, started: float) -> bool:
    """A model's turn in a round ends after its share of the runs, or of the time budget (at least one run)."""
    if budget is None:
        return done >= runs
    return done > 0 and time.perf_counter() - started >= budget


def _signature(inputs: list[Any]) -> dict[str, tuple[str, int]]:
    """What models run on the same feeds must share: input names, dtypes and ranks (not their order, nor the
    names of symbolic dimensions)."""
    return {i.name: (i.dtype, len(i.shape)) for i in inputs}
