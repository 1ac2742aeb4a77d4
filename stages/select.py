"""select: pick the best of several models by an objective under constraints, from benchmark and accuracy results."""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
    KnownMetrics,
    Measure,
    Port,
    ReportSection,
    Scalar,
    Selection,
    SelectionCandidate,
    Stage,
    StageContext,
    StageError,
    StageResult,
    bound_problems,
    read_document,
    write_document,
)
from ortflow.stages.search.pareto import pareto_front

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
D = TypeVar("D", AccuracyResults, BenchmarkResults)
BOUNDS = {"type": "object", "additionalProperties": {"type": "number"}, "default": {}}


@dataclass
class Candidate:
    id: str
    model: int  # index into the `models` input
    config: dict[str, Scalar] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    shortfall: float = 0.0  # the largest relative miss of a constraint (0 when all are met)


class Select(Stage):
    type = "select"
    version = "3"  # 3: selection.json and the summary name the data the accuracy verdict rests on
    description = (
        "Choose one model among variants (usually every instance of a matrix stage, `int8.model[*]`): the best by an "
        "objective (`minimize: p50_ms` or `maximize: speedup`, ...) among those meeting every constraint (`min: "
        "{cosine_mean: 0.99}`, `max: {size_mb: 40}`). Metrics come from a benchmark's and a validate_accuracy's "
        "results over the same models; accuracy metrics count at their worst over the model's outputs. A benchmark "
        "that sweeps threads or batch sizes makes each (model, configuration) a candidate. Writes why (every "
        "candidate, its metrics, what it missed, the Pareto front) and outputs the chosen model; exit 3 when none "
        "qualifies, naming the closest. A choice on accuracy measured on random feeds says so (`unverified: random feeds`)."
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
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "minimize": {
                "type": "string",
                "description": "metric to minimize (default p50_ms when maximize is not set)",
            },
            "maximize": {
                "type": "string",
                "description": "metric to maximize, e.g. speedup or cosine_mean",
            },
            "min": {**BOUNDS, "description": "constraints: metric -> lowest acceptable value"},
            "max": {**BOUNDS, "description": "constraints: metric -> highest acceptable value"},
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        if params.get("minimize") and params.get("maximize"):
            return ["set one of minimize and maximize, not both"]
        return []

    def check_metrics(self, params: dict[str, Any], known: KnownMetrics) -> list[str]:
        """Constraints and the objective name metrics the benchmark or the accuracy results carry."""
        if "accuracy" in known.inputs and known.inputs["accuracy"] is None:
            return []  # its producer cannot say before it runs
        names = {
            **(SPEED if "benchmark" in known.inputs else {}),
            **(known.inputs.get("accuracy") or {}),
        }
        objective = params.get("maximize") or params.get("minimize") or "p50_ms"
        if objective in SPEED and "benchmark" not in known.inputs:
            return [
                f"the objective {objective} is a benchmark result — give a `benchmark` input",
                *bound_problems(params["min"], params["max"], names),
            ]
        return bound_problems(params["min"], params["max"], names, (objective,))

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.params
        goal, objective = (
            ("maximize", params["maximize"])
            if params.get("maximize")
            else ("minimize", params.get("minimize") or "p50_ms")
        )
        names = ctx.labels("models")
        accuracy = _read(ctx, "accuracy", AccuracyResults)
        benchmark = _read(ctx, "benchmark", BenchmarkResults)
        candidates = _candidates(names, benchmark, accuracy)
        wanted = [objective, *params["min"], *params["max"]]
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
        for c in candidates:
            _judge(c, objective, params)
        eligible = [c for c in candidates if not c.misses]
        sign = 1 if goal == "maximize" else -1
        chosen = max(eligible, key=lambda c: sign * c.values[objective]) if eligible else None
        plotted = next((m for m in [*params["min"], *params["max"]] if m != objective), None)
        front = _front(candidates, objective, sign, params)
        measured_on = (
            accuracy.data if accuracy is not None else None
        )  # what the accuracy verdict was measured on
        document = Selection(
            goal,
            objective,
            Bounds(params["min"], params["max"]),
            measured_on,
            chosen.id if chosen else None,
            [
                SelectionCandidate(
                    c.id,
                    names[c.model],
                    c.config,
                    c.values,
                    not c.misses,
                    c.misses,
                    c.id in front,
                    c is chosen,
                )
                for c in candidates
            ],
            _report(candidates, chosen, front, objective, goal, plotted, params, measured_on),
        )
        write_document(ctx.output_path("selection"), document)
        metrics = {
            "candidates": len(candidates),
            "eligible": len(eligible),
            "pareto": sorted(front),
        }
        if chosen is None:
            closest = min(candidates, key=lambda c: c.shortfall)
            raise GateFailed(
                f"none of {len(candidates)} candidates meets the constraints; closest {closest.id}: "
                f"{'; '.join(closest.misses)} — relax the constraints or add variants",
                metrics=metrics,
                data_source=measured_on,
            )
        source = ctx.paths("models")[chosen.model]
        if source.is_dir():  # a model over 2 GB: a folder with its external data
            shutil.copytree(source, ctx.output_path("model"))
        else:
            shutil.copyfile(source, ctx.output_path("model"))
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
        return StageResult(
            summary=f"{chosen.id}: {shown} ({len(eligible)} of {len(candidates)} meet the constraints{unverified})",
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
    names: list[str], benchmark: BenchmarkResults | None, accuracy: AccuracyResults | None
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
            c = Candidate(label, index, settings)
            if row is not None:
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


def _judge(c: Candidate, objective: str, params: dict[str, Any]) -> None:
    for metric in dict.fromkeys([objective, *params["min"], *params["max"]]):
        if metric not in c.values or not math.isfinite(c.values[metric]):
            c.misses.append(
                f"{metric} not measured"
                if metric not in c.values
                else f"{metric} is {c.values[metric]}"
            )
            c.shortfall = math.inf
    for bounds, sign in ((params["min"], 1), (params["max"], -1)):
        for metric, bound in bounds.items():
            if metric not in c.values:
                continue
            value = c.values[metric]  # accuracy metrics at their worst over the gated outputs
            if math.isfinite(value) and sign * (value - bound) < 0:
                c.misses.append(
                    f"{metric} {_fmt(value)} {'<' if sign > 0 else '>'} {'min' if sign > 0 else 'max'} {bound}"
                )
                c.shortfall = max(c.shortfall, abs(value - bound) / (abs(bound) or 1))


def _front(
    candidates: list[Candidate], objective: str, sign: int, params: dict[str, Any]
) -> set[str]:
    """Pareto front over the objective and every constrained metric, each in its better direction."""
    axes = [
        (objective, sign),
        *[(m, 1) for m in params["min"] if m != objective],
        *[(m, -1) for m in params["max"] if m != objective],
    ]
    measured = [
        c for c in candidates if all(m in c.values and math.isfinite(c.values[m]) for m, _ in axes)
    ]
    on_front = pareto_front([[s * c.values[m] for m, s in axes] for c in measured])
    return {c.id for c, front in zip(measured, on_front) if front}


def _report(
    candidates: list[Candidate],
    chosen: Candidate | None,
    front: set[str],
    objective: str,
    goal: str,
    plotted: str | None,
    params: dict[str, Any],
    source: DataSource | None,
) -> ReportSection:
    metrics = list(
        dict.fromkeys(
            [
                objective,
                *params["min"],
                *params["max"],
                "p50_ms",
                "speedup",
                "size_mb",
                "cosine_mean",
            ]
        )
    )
    metrics = [m for m in metrics if any(m in c.values for c in candidates)]
    order = sorted(
        candidates,
        key=lambda c: (
            bool(c.misses),
            (-1 if goal == "maximize" else 1) * c.values.get(objective, math.inf),
        ),
    )
    rows = [
        [
            c.id + (" (chosen)" if c is chosen else ""),
            *[c.values.get(m, "") for m in metrics],
            "yes" if not c.misses else "no: " + "; ".join(c.misses),
            "yes" if c.id in front else "",
        ]
        for c in order
    ]
    on = f" — accuracy on {source.label()}" if source is not None else ""
    table = {
        "title": f"Candidates: {goal} {objective} subject to the constraints{on}",
        "rows": rows,
        "columns": ["candidate", *metrics, "meets constraints", "Pareto"],
    }
    charts = []
    if plotted:
        points = [
            {
                "label": c.id,
                "x": c.values[objective],
                "y": c.values[plotted],
                "front": c.id in front,
                "chosen": c is chosen,
            }
            for c in candidates
            if objective in c.values and plotted in c.values
        ]
        charts.append(
            {
                "kind": "scatter",
                "title": f"{objective} against {plotted} (Pareto front marked)",
                "points": points,
                "x_label": objective,
                "y_label": plotted,
            }
        )
    return {"tables": [table], "charts": charts}


def _fmt(value: float) -> str:
    return f"{value:.4g}"
