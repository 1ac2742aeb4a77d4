"""select: pick the best of several models by an objective under constraints, from benchmark and accuracy results."""

from __future__ import annotations

import math
import shutil
from typing import TypeVar

from ortflow.api import (
    BENCHMARK_CONFIG,
    AccuracyResults,
    ArtifactKind,
    BenchmarkResults,
    Better,
    Bounds,
    Choice,
    DataSource,
    Declares,
    GateFailed,
    Json,
    KnownMetrics,
    Measure,
    Port,
    Scalar,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    bound_problems,
    read_document,
    write_document,
)
from ortflow.stages.search.pareto import pareto_front
from ortflow.stages.search.select_params import PARAMS_SCHEMA, SelectSettings
from ortflow.stages.search.selection import (
    Candidate,
    Outcome,
    beyond_the_spread,
    round_spread,
    selection_document,
    uncalibrated,
)

# Benchmark metrics, read from each result row; the rest of a candidate's metrics come from the accuracy results.
LATENCY = {
    "p50_ms": "p50",
    "p90_ms": "p90",
    "p95_ms": "p95",
    "p99_ms": "p99",
    "mean_ms": "mean",
    "min_ms": "min",
}
ROW = ("speedup", "throughput_per_s", "size_mb", "peak_rss_mb", "session_create_s")
SPEED = {
    **{m: Better.LOWER for m in LATENCY},
    "speedup": Better.HIGHER,
    "throughput_per_s": Better.HIGHER,
    "size_mb": Better.LOWER,
    "peak_rss_mb": Better.LOWER,
    "session_create_s": Better.LOWER,
}
UNITS = {
    **{m: "ms" for m in LATENCY},
    "speedup": "x",
    "size_mb": "MB",
    "peak_rss_mb": "MB",
}  # the rest: "" (named in full)
# The objectives that make `select` choose on speed, where a candidate must beat the original beyond the spread.
FASTER = {*LATENCY, "speedup", "throughput_per_s"}
D = TypeVar("D", AccuracyResults, BenchmarkResults)


class Select(SettingsStage[SelectSettings]):
    type = "select"
    # 3: selection.json and the summary name the data the accuracy verdict rests on; 4: a model whose activation
    # ranges were calibrated on random or unknown data is never chosen; 5: on a speed objective, a model is
    # chosen over the benchmark's baseline only if faster in every round (speedup_low > 1)
    version = "5"
    description = (
        "Choose one model among variants (usually every instance of a matrix stage, `int8.model[*]`): the best by an "
        "objective (`minimize: p50_ms` or `maximize: speedup`, ...) among those meeting every constraint (`min: "
        "{cosine_mean: 0.99}`, `max: {size_mb: 40}`). Metrics come from a benchmark's and a validate_accuracy's "
        "results over the same models; accuracy metrics count at their worst over the model's outputs. A benchmark "
        "that sweeps threads or batch sizes makes each (model, configuration) a candidate. Writes why (every "
        "candidate, its metrics, what it missed, the Pareto front) and outputs the chosen model; exit 3 when none "
        "qualifies, naming the closest. On a speed objective, with the benchmark's baseline (the original) among the "
        "eligible candidates, a model is chosen over it only if it was faster in every round of the benchmark "
        "(`speedup_low`, its lowest per-round speedup, above 1): a difference within the spread over rounds is "
        "noise, and the original is kept. A choice on accuracy measured on random feeds says so (`unverified: random feeds`). "
        "A model whose activation ranges were calibrated upstream on random feeds or data of unknown provenance "
        "(a calibrate stage on such a dataset, or a table given as a recipe input) is never chosen, however fast "
        "and however well it scores: selection.json says so among its misses."
    )
    inputs = (
        Port("models", ArtifactKind.ONNX_MODEL, "the candidates", many=True),
        Port(
            "benchmark",
            ArtifactKind.METRICS,
            "a benchmark stage's results over these models",
            optional=True,
        ),
        Port(
            "accuracy",
            ArtifactKind.METRICS,
            "a validate_accuracy stage's results over these models",
            optional=True,
        ),
    )
    outputs = (
        Port(
            "model",
            ArtifactKind.ONNX_MODEL,
            "the chosen model",
            filename="model.onnx",
            optional=True,
        ),
        Port(
            "selection",
            ArtifactKind.METRICS,
            "every candidate, its metrics and verdict, the Pareto front",
            filename="selection.json",
        ),
    )
    # `engine optimize` reads the choice through these ports; the speed metrics' units label the report's axes.
    declares = Declares(
        measures=tuple(Measure(m, b, UNITS.get(m, "")) for m, b in SPEED.items()),
        choice=Choice(model="model", document="selection"),
    )
    params_schema = PARAMS_SCHEMA

    settings = SelectSettings

    def problems(self, settings: SelectSettings) -> list[str]:
        if settings.minimize and settings.maximize:
            return ["set one of minimize and maximize, not both"]
        return []

    def metric_problems(self, settings: SelectSettings, known: KnownMetrics) -> list[str]:
        """Constraints and the objective name metrics the benchmark or the accuracy results carry."""
        if "accuracy" in known.inputs and known.inputs["accuracy"] is None:
            return []  # its producer cannot say before it runs
        names = {
            **(SPEED if "benchmark" in known.inputs else {}),
            **(known.inputs.get("accuracy") or {}),
        }
        objective = settings.maximize or settings.minimize or "p50_ms"
        if objective in SPEED and "benchmark" not in known.inputs:
            return [
                f"the objective {objective} is a benchmark result — give a `benchmark` input",
                *bound_problems(settings.min, settings.max, names),
            ]
        return bound_problems(settings.min, settings.max, names, (objective,))

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(SelectSettings)
        goal, objective = params.goal()
        names = ctx.labels("models")
        accuracy = _read(ctx, "accuracy", AccuracyResults)
        benchmark = _read(ctx, "benchmark", BenchmarkResults)
        wanted = [objective, *params.min, *params.max]
        bounds = Bounds(dict(params.min), dict(params.max))
        outcome = choose(
            names, benchmark, accuracy, ctx.calibration_data("models"), (goal, objective), bounds
        )
        candidates = outcome.candidates
        write_document(ctx.output_path("selection"), selection_document(outcome, names))
        metrics: dict[str, Json] = {
            "candidates": len(candidates),
            "eligible": len(outcome.eligible),
            "pareto": [*sorted(outcome.front)],  # a list of Json (a list is invariant)
        }
        if outcome.chosen is None:
            closest = min(candidates, key=lambda c: c.shortfall)
            raise GateFailed(
                f"none of {len(candidates)} candidates meets the constraints; closest {closest.id}: "
                f"{'; '.join(closest.misses)} — relax the constraints or add variants",
                metrics=metrics,
                data_source=outcome.measured_on,
            )
        _copy_model(ctx, outcome.chosen.model)
        return _result(outcome, wanted, metrics)


def choose(
    names: list[str],
    benchmark: BenchmarkResults | None,
    accuracy: AccuracyResults | None,
    calibrated_on: list[DataSource | None],
    goal: tuple[str, str],
    bounds: Bounds,
) -> Outcome:
    """Every candidate judged (constraints, calibration data, the spread over rounds on a speed objective)
    and the best eligible one: `goal` is (minimize or maximize, the objective)."""
    direction, objective = goal
    candidates = _candidates(names, benchmark, accuracy, calibrated_on)
    _require_measured([objective, *bounds.min, *bounds.max], candidates, benchmark, accuracy)
    for c in candidates:
        _judge(c, objective, bounds)
    if objective in FASTER:
        beyond_the_spread(candidates, names, benchmark.baseline if benchmark else None)
    return _outcome(candidates, direction, objective, bounds, accuracy)


def _require_measured(
    wanted: list[str],
    candidates: list[Candidate],
    benchmark: BenchmarkResults | None,
    accuracy: AccuracyResults | None,
) -> None:
    """Every metric the objective and the constraints name must be measured for some candidate: say which
    input would give it."""
    known = {k for c in candidates for k in c.values}
    unknown = [m for m in wanted if m not in known]
    if unknown:
        where = (
            "give a `benchmark` input"
            if any(m in LATENCY or m in ROW for m in unknown) and benchmark is None
            else "give an `accuracy` input"
            if accuracy is None
            else f"known metrics: {', '.join(sorted(known))}"
        )
        raise StageError(f"no candidate has the metric {', '.join(unknown)} — {where}")


def _outcome(
    candidates: list[Candidate],
    goal: str,
    objective: str,
    bounds: Bounds,
    accuracy: AccuracyResults | None,
) -> Outcome:
    """The judged candidates' outcome: the best eligible one by the objective, and the Pareto front."""
    eligible = [c for c in candidates if not c.misses]
    sign = 1 if goal == "maximize" else -1
    chosen = max(eligible, key=lambda c: sign * c.values[objective]) if eligible else None
    return Outcome(
        goal,
        objective,
        bounds,
        candidates,
        chosen,
        _front(candidates, objective, sign, bounds),
        next((m for m in [*bounds.min, *bounds.max] if m != objective), None),
        accuracy.data if accuracy is not None else None,
    )


def _copy_model(ctx: StageContext, index: int) -> None:
    source = ctx.paths("models")[index]
    if source.is_dir():  # a model over 2 GB: a folder with its external data
        shutil.copytree(source, ctx.output_path("model"))
    else:
        shutil.copyfile(source, ctx.output_path("model"))


def _result(outcome: Outcome, wanted: list[str], metrics: dict[str, Json]) -> StageResult:
    """The chosen candidate's values of the wanted metrics, in the summary and the metrics, and whether the
    accuracy it was chosen on was measured on real data."""
    chosen, measured_on = outcome.chosen, outcome.measured_on
    assert chosen is not None
    shown = ", ".join(f"{k} {_fmt(v)}" for k, v in chosen.values.items() if k in wanted)
    metrics.update(
        {
            "chosen": chosen.id,
            **{f"chosen_{k}": v for k, v in chosen.values.items() if k in wanted},
        }
    )
    unverified = (
        f"; chosen on {measured_on.label()}"
        if measured_on is not None and not measured_on.verified
        else ""
    )
    eligible, candidates = len(outcome.eligible), len(outcome.candidates)
    return StageResult(
        summary=f"{chosen.id}: {shown} ({eligible} of {candidates} meet the constraints{unverified})",
        metrics=metrics,
        data_source=measured_on,
    )


def _read(ctx: StageContext, port: str, kind: type[D]) -> D | None:
    if not ctx.has(port):
        return None
    try:
        return read_document(ctx.path(port), kind)
    except StageError as exc:
        raise StageError(f"input '{port}' ({ctx.references.get(port)}): {exc}") from None


def _candidates(
    names: list[str],
    benchmark: BenchmarkResults | None,
    accuracy: AccuracyResults | None,
    calibrated_on: list[DataSource | None],
) -> list[Candidate]:
    rows = benchmark.results if benchmark else []
    if benchmark is not None:
        missing = [n for n in names if not any(r.model == n for r in rows)]
        if missing:
            raise StageError(
                f"the benchmark did not measure {', '.join(missing)} — benchmark the same models "
                "(e.g. the same `x.model[*]` reference)"
            )
    configs: list[tuple[Scalar, ...]] = sorted({r.config() for r in rows}, key=_order) or [()]
    varying = [k for i, k in enumerate(BENCHMARK_CONFIG) if len({c[i] for c in configs if c}) > 1]
    candidates = []
    for index, name in enumerate(names):
        accuracy_values = accuracy.model_values(name) if accuracy is not None else {}
        for config in configs:
            row = next((r for r in rows if r.model == name and r.config() == config), None)
            settings = {k: v for k, v in zip(BENCHMARK_CONFIG, config) if k in varying}
            label = name + (
                f" ({', '.join(f'{k} {v}' for k, v in settings.items())})" if settings else ""
            )
            c = Candidate(label, index, settings, calibrated_on=calibrated_on[index])
            if row is not None:
                c.session = row.session
                base = benchmark.row(benchmark.baseline, like=row) if benchmark else None
                c.values.update(round_spread(row, base if base is not row else None))
                c.values.update({m: getattr(row.latency_ms, p) for m, p in LATENCY.items()})
                c.values.update(
                    {m: getattr(row, m) for m in ROW if isinstance(getattr(row, m), (int, float))}
                )
            c.values.update(accuracy_values)
            candidates.append(c)
    return candidates


def _order(config: tuple[Scalar, ...]) -> tuple[tuple[bool, Scalar], ...]:
    """Configurations in order, None (the data's own sequence length) first."""
    return tuple((value is not None, value) for value in config)


def _judge(c: Candidate, objective: str, constraints: Bounds) -> None:
    refused = uncalibrated(c.calibrated_on)
    if refused is not None:  # before any metric: no score makes ranges fitted to noise eligible
        c.misses.append(refused)
        c.shortfall = math.inf
    for metric in dict.fromkeys([objective, *constraints.min, *constraints.max]):
        if metric not in c.values or not math.isfinite(c.values[metric]):
            c.misses.append(
                f"{metric} not measured"
                if metric not in c.values
                else f"{metric} is {c.values[metric]}"
            )
            c.shortfall = math.inf
    for bounds, sign in ((constraints.min, 1), (constraints.max, -1)):
        for metric, bound in bounds.items():
            if metric not in c.values:
                continue
            value = c.values[metric]  # accuracy metrics at their worst over the gated outputs
            if math.isfinite(value) and sign * (value - bound) < 0:
                c.misses.append(
                    f"{metric} {_fmt(value)} {'<' if sign > 0 else '>'} {'min' if sign > 0 else 'max'} {bound}"
                )
                c.shortfall = max(c.shortfall, abs(value - bound) / (abs(bound) or 1))


def _front(candidates: list[Candidate], objective: str, sign: int, bounds: Bounds) -> set[str]:
    """Pareto front over the objective and every constrained metric, each in its better direction."""
    axes = [
        (objective, sign),
        *[(m, 1) for m in bounds.min if m != objective],
        *[(m, -1) for m in bounds.max if m != objective],
    ]
    measured = [
        c for c in candidates if all(m in c.values and math.isfinite(c.values[m]) for m, _ in axes)
    ]
    on_front = pareto_front([[s * c.values[m] for m, s in axes] for c in measured])
    return {c.id for c, front in zip(measured, on_front) if front}


def _fmt(value: float) -> str:
    return f"{value:.4g}"
