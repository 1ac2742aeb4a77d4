"""validate_accuracy's verdict as accuracy.json: every value per model and output or metric group, each
metric's counted value with which way is better, and its section of the run report (one table per kind of
measurement, each saying what data it was measured on)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from ortflow.api import Better, DataSource, Json
from ortflow.stages.measurement import task_metrics
from ortflow.stages.measurement.accuracy_gates import Counted, Results
from ortflow.stages.measurement.accuracy_settings import AccuracySettings

if TYPE_CHECKING:  # annotations only: the documents load when the stage runs
    from ortflow.api import AccuracyResults, ReferenceValues, ReportSection, Table

# the results as accuracy.json records them (rounded): model -> output or metric group -> metric -> value
Recorded = dict[str, dict[str, dict[str, Json]]]
Values = Mapping[str, Mapping[str, Json]]  # model -> metric -> counted value

LABELS_GROUP = "labels"  # where accuracy and macro F1 against a labelled dataset are kept


@dataclass(frozen=True)
class Verdict:
    """What a validate_accuracy run measured and decided, as accuracy.json records it."""

    results: Results
    counted: dict[str, Counted]  # model -> metric -> (counted value, where it was counted)
    better: dict[str, Better]
    reference_scores: dict[str, float] | None  # the reference against the labels, when labelled
    samples: int
    failures: list[str]  # the gates missed
    source: DataSource  # the data the verdict rests on


def accuracy_document(
    verdict: Verdict, params: AccuracySettings, reference: ReferenceValues
) -> AccuracyResults:
    """accuracy.json: every value per model and output or metric group, and each metric's counted value
    (`values`, its worst over the gated outputs) with which way is better, which select and quantize_search read;
    `data`: the data the verdict rests on (engine.contracts.provenance.DataSource), which select passes on."""
    from ortflow.api import AccuracyResults, Bounds

    results, counted, better = verdict.results, verdict.counted, verdict.better
    rounded: Recorded = {
        n: {o: {k: rounded_value(v) for k, v in m.items()} for o, m in per.items()}
        for n, per in results.items()
    }
    values = {n: {m: rounded_value(v) for m, (v, _) in c.items()} for n, c in counted.items()}
    used = sorted({m for c in counted.values() for m in c})
    return AccuracyResults(
        verdict.samples,
        rounded,
        values,
        {n: {m: where for m, (_, where) in c.items()} for n, c in counted.items()},
        {m: better.get(m, Better.HIGHER) for m in used},
        verdict.reference_scores,
        Bounds(dict(params.min), dict(params.max)),
        verdict.failures,
        verdict.source,
        _report(rounded, values, verdict.reference_scores, params, verdict.source),
        reference=reference,
    )


@overload
def rounded_value(value: float) -> float: ...


@overload
def rounded_value(value: Json) -> Json: ...


def rounded_value(value: Json) -> Json:
    """A finite float to 6 significant digits (as recorded, and as gates are re-judged); the rest as they are."""
    return float(f"{value:.6g}") if isinstance(value, float) and math.isfinite(value) else value


def _report(
    results: Recorded,
    values: Values,
    reference_labelled: dict[str, float] | None,
    params: AccuracySettings,
    source: DataSource,
) -> ReportSection:
    on = f" — {source.label()}"  # every table says what data it was measured on
    groups = {*params.metrics, LABELS_GROUP, task_metrics.FILE_GROUP}
    tables = [_outputs_table(results, groups, on)]
    task = sorted(
        {
            k
            for per in results.values()
            for g, m in per.items()
            if g in groups - {LABELS_GROUP}
            for k in m
        }
    )
    if task:
        tables.append(
            {
                "title": "Task metrics against the reference" + on,
                "columns": ["model", *task],
                "rows": [[name, *[values[name].get(k, "") for k in task]] for name in results],
            }
        )
    if reference_labelled is not None:
        tables.append(_labels_table(results, reference_labelled, on))
    return {"tables": tables}


def _outputs_table(results: Recorded, groups: set[str], on: str) -> Table:
    """The output comparisons, one row per model and compared output (metric groups have tables of their own)."""
    columns = [
        "model",
        "output",
        "cosine mean",
        "cosine min",
        "max abs",
        "mean abs",
        "argmax agrees",
        "labels agree",
    ]
    rows = [
        [
            name,
            output,
            m.get("cosine_mean", ""),
            m.get("cosine_min", ""),
            m.get("max_abs", ""),
            m.get("mean_abs", ""),
            m.get("top1_agreement", ""),
            m.get("label_agreement", ""),
        ]
        for name, per in results.items()
        for output, m in per.items()
        if output not in groups
    ]
    return {"title": "Accuracy against the reference" + on, "columns": columns, "rows": rows}


def _labels_table(results: Recorded, reference_labelled: dict[str, float], on: str) -> Table:
    """Accuracy and macro F1 against the dataset's labels, the reference's first."""
    rows: list[list[Json]] = [
        ["reference", reference_labelled["accuracy"], reference_labelled["f1_macro"]]
    ]
    rows += [
        [name, per[LABELS_GROUP]["accuracy"], per[LABELS_GROUP]["f1_macro"]]
        for name, per in results.items()
    ]
    return {
        "title": "Against the labels" + on,
        "columns": ["model", "accuracy", "macro F1"],
        "rows": rows,
    }
