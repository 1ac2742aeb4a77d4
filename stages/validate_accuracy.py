"""validate_accuracy: compare candidate models with a reference on held-out data, and gate on thresholds."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from ortflow.api import (
    AccuracyResults,
    ArtifactKind,
    Axis,
    Better,
    Bounds,
    DataSource,
    Declares,
    GateFailed,
    KnownMetrics,
    Measure,
    Port,
    ReferenceValues,
    ReportSection,
    Stage,
    StageContext,
    StageError,
    StageResult,
    bound_problems,
    model_inputs,
    write_document,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.measurement import task_metrics
from ortflow.stages.measurement.accuracy_gates import counted_values, gate_failures, verdict_data
from ortflow.stages.measurement.output_comparison import (
    BUILT_IN,
    FLOAT_ONLY,
    SLICE,
    compare,
    labelled,
    sliced,
)

LABELS_GROUP = "labels"  # where accuracy and macro F1 against a labelled dataset are kept


class ValidateAccuracy(Stage):
    type = "validate_accuracy"
    version = "3"  # 3: accuracy.json names the data its verdict rests on (`data`)
    description = (
        "Run a reference model (usually the fp32 original) and candidates on the same held-out feeds and "
        "compare outputs: max/mean absolute and relative error, per-sample cosine (optionally after pooling, "
        "e.g. attention-masked mean for embeddings), top-1/top-k agreement, exact agreement of integer outputs, "
        "task metrics (`metrics: {detection: {output: output0}}`, `{exact: {outputs: [tags], argmax_axis: -1}}`, "
        "or any installed under `ortflow.metrics`) and a recipe-local metric file. An output can be sliced (e.g. the "
        "class-score rows of a detector) since one cosine over a whole output can hide real damage. `min:`/`max:` "
        "thresholds on any of these names gate the run: a miss fails the stage (exit code 3) with the numbers. The verdict "
        "names its data: real data by loader and path, `unverified: random feeds`, and `calibration data reused` when "
        "the candidates were built from the same dataset."
    )
    inputs = (
        Port("reference", ArtifactKind.ONNX_MODEL, "the model whose outputs count as right"),
        # optional: where every candidate upstream was refused (optional stages, dropped), the reference's own values
        # are still what select needs to keep the original
        Port(
            "candidates", ArtifactKind.ONNX_MODEL, "the models to check", many=True, optional=True
        ),
        Port("data", ArtifactKind.DATASET, "held-out feeds"),
        Port(
            "metric",
            ArtifactKind.FILE,
            "a .py file declaring METRICS and defining `metric_function` (its content is "
            "part of the cache key)",
            optional=True,
        ),
    )
    outputs = (
        Port(
            "results",
            ArtifactKind.METRICS,
            "metrics per candidate and output",
            filename="accuracy.json",
        ),
    )
    declares = Declares(
        measures=(
            Measure(
                "cosine_mean", Better.HIGHER, plot=Axis.ACCURACY, title="mean cosine vs reference"
            ),
        )
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 100,
                "description": "at most this many feeds",
            },
            "outputs": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "output names to compare (default: all)",
            },
            "slices": {
                "type": "object",
                "additionalProperties": {"type": "string", "pattern": SLICE.pattern},
                "default": {},
                "description": "per output, a numpy slice of it to compare, e.g. {output0: '[..., 4:]'}",
            },
            "pooling": {
                "enum": ["none", "mean", "masked_mean", "first"],
                "default": "none",
                "description": "reduce [batch, tokens, hidden] outputs before cosine: mean, attention-masked mean, "
                "or the first token",
            },
            "mask_input": {
                "type": "string",
                "default": "attention_mask",
                "description": "the input masked_mean uses",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "default": 5,
                "description": "k for topk_agreement (argmax over the last axis)",
            },
            "label_output": {
                "type": "string",
                "description": "with a labelled dataset: the output holding class scores, for accuracy and macro F1",
            },
            "metrics": {
                "type": "object",
                "additionalProperties": {"type": "object"},
                "default": {},
                "description": "task metrics by type with their parameters, e.g. {detection: {output: output0}} "
                "(`engine stages` lists those installed)",
            },
            "min": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "default": {},
                "description": "gates: every candidate must reach these, e.g. {cosine_mean: 0.99, det_f1: 0.9}",
            },
            "max": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "default": {},
                "description": "gates: every candidate must stay under these, e.g. {max_abs: 0.05}",
            },
            "gate_outputs": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "outputs the gates apply to (default: every compared output); task metrics always count",
            },
            "metric_function": {
                "type": "string",
                "default": "metric",
                "description": "in the `metric` input file: f(reference, candidate, feeds) -> {name: number}, "
                "outputs given as {output name: [array per feed]}",
            },
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        problems = task_metrics.problems(params["metrics"])
        if params["outputs"] and set(params["gate_outputs"]) - set(params["outputs"]):
            problems.append(
                f"gate_outputs {sorted(set(params['gate_outputs']) - set(params['outputs']))} are not among `outputs`"
            )
        if {"accuracy", "f1_macro"} & set(params["min"]) and not params.get("label_output"):
            problems.append(
                "gates on accuracy or f1_macro need label_output (and a dataset with labels)"
            )
        return problems

    def metric_names(
        self, params: dict[str, Any], files: dict[str, Path]
    ) -> dict[str, Better] | None:
        names = {n.name: n.better for n in BUILT_IN}
        names.update(task_metrics.directions(params["metrics"]))
        if "metric" in files:
            try:
                names.update(task_metrics.declared(files["metric"]))
            except StageError:
                return None  # the run says what is wrong with the file
        return names

    def check_metrics(self, params: dict[str, Any], known: KnownMetrics) -> list[str]:
        return bound_problems(params["min"], params["max"], known.own)

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        # Integer kernels differ between CPUs (VNNI or not), so a verdict holds for the instruction set it was
        # made on; the CPU's model name alone is the same for VNNI and non-VNNI hosts of one cloud family.
        # An installed metric's package and version too: its results are only as good as its code.
        return (
            "onnxruntime",
            "numpy",
            "cpu",
            "isa",
            *(f"plugin:ortflow.metrics:{name}" for name in params["metrics"]),
        )

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.params
        reference = onnx_model.model_file(ctx.path("reference"))
        candidates = [onnx_model.model_file(p) for p in ctx.paths("candidates")]
        names = ctx.labels("candidates") if candidates else []
        inputs = model_inputs(reference)
        _check_same_inputs(names, candidates, inputs)
        feeds = list(ctx.dataset("data").feeds(inputs, limit=params["samples"]))
        expected = _outputs(reference, feeds)
        chosen = params["outputs"] or list(expected)
        missing = [
            o for o in chosen + list(params["slices"]) + params["gate_outputs"] if o not in expected
        ]
        if missing:
            raise StageError(
                f"the reference has no output {', '.join(missing)} (it has {', '.join(expected)})"
            )
        metric = ctx.path("metric") if ctx.has("metric") else None
        better = {n.name: n.better for n in BUILT_IN} | task_metrics.directions(params["metrics"])
        better |= task_metrics.declared(metric) if metric is not None else {}
        _refuse_meaningless(params, expected, chosen)
        results: dict[str, dict[str, Any]] = {}
        for done, (name, path) in enumerate(zip(names, candidates), start=1):
            results[name] = _candidate_results(
                name, _outputs(path, feeds), feeds, expected, chosen, params, metric
            )
            ctx.progress(done, len(candidates), f"models checked on {len(feeds)} samples")
        labels = ctx.dataset("data").labels(limit=params["samples"])
        reference_scores = None
        if params.get("label_output"):
            reference_scores = _label_scores(
                results, names, candidates, feeds, expected, labels, params["label_output"]
            )
        groups = {*params["metrics"], LABELS_GROUP, task_metrics.FILE_GROUP}
        counted = {
            n: counted_values(per, groups, params["gate_outputs"], better)
            for n, per in results.items()
        }
        failures = gate_failures(counted, params)  # on the unrounded values
        # The reference against itself: what select counts for it when it is also one of the models to choose from.
        itself = _candidate_results("reference", expected, feeds, expected, chosen, params, metric)
        own = counted_values(
            itself | {LABELS_GROUP: reference_scores or {}}, groups, params["gate_outputs"], better
        )
        source = verdict_data(ctx, "data", ("candidates",))
        document = _document(
            results, counted, better, reference_scores, params, len(feeds), failures, source
        )
        document = replace(
            document,
            reference=ReferenceValues(
                ctx.label("reference"), {m: _round(v) for m, (v, _) in own.items()}
            ),
        )
        write_document(ctx.output_path("results"), document)
        shown = _shown(params, counted)
        metrics = {m: {n: round(v[m][0], 6) for n, v in counted.items() if m in v} for m in shown}
        if failures:
            raise GateFailed("; ".join(failures), metrics=metrics, data_source=source)
        summary = "; ".join(
            f"{n} " + ", ".join(f"{_label(m)} {v[m][0]:.4g}" for m in shown if m in v)
            or f"{n} (nothing measured)"
            for n, v in counted.items()
        )
        summary += " — gates passed" if params["min"] or params["max"] else ""
        return StageResult(
            summary=summary
            if candidates
            else "no candidates to check: the reference's own values only",
            metrics=metrics,
            data_source=source,
        )


def _shown(params: dict[str, Any], counted: dict[str, Any]) -> list[str]:
    """The metrics a run's table and records show: the gated ones, the task metrics', and cosine where measured
    (the report plots it against speed)."""
    names = [*params["min"], *params["max"]]
    for entry in task_metrics.configured(params["metrics"]):
        names += [n.name for n in entry.metric.names]
    names += [
        n
        for v in counted.values()
        for n in v
        if n not in names and n.startswith(("cosine_mean", "label_agreement"))
    ]
    names += [n for v in counted.values() for n in v if n not in names and n in ("accuracy",)]
    return list(dict.fromkeys(names))


def _label(metric: str) -> str:
    return "cosine" if metric == "cosine_mean" else metric


def _document(
    results: dict[str, dict[str, Any]],
    counted: dict[str, Any],
    better: dict[str, Better],
    reference_scores: dict[str, float] | None,
    params: dict[str, Any],
    samples: int,
    failures: list[str],
    source: DataSource,
) -> AccuracyResults:
    """accuracy.json: every value per model and output or metric group, and each metric's counted value
    (`values`, its worst over the gated outputs) with which way is better, which select and quantize_search read;
    `data`: the data the verdict rests on (engine.provenance.DataSource), which select passes on."""
    rounded = {
        n: {o: {k: _round(v) for k, v in m.items()} for o, m in per.items()}
        for n, per in results.items()
    }
    values = {n: {m: _round(v) for m, (v, _) in c.items()} for n, c in counted.items()}
    used = sorted({m for c in counted.values() for m in c})
    return AccuracyResults(
        samples,
        rounded,
        values,
        {n: {m: where for m, (_, where) in c.items()} for n, c in counted.items()},
        {m: better.get(m, Better.HIGHER) for m in used},
        reference_scores,
        Bounds(params["min"], params["max"]),
        failures,
        source,
        _report(rounded, values, reference_scores, params, source),
    )


# -- the steps of run, in order --------------------------------------------------------------------


def _check_same_inputs(names: list[str], candidates: list[Path], inputs: list[Any]) -> None:
    """Every candidate must take the reference's inputs, since all run on the same feeds: the same names with
    the same dtypes and ranks (their order and the names of symbolic dimensions do not matter)."""

    def signature(found: list[Any]) -> dict[str, tuple[str, int]]:
        return {i.name: (i.dtype, len(i.shape)) for i in found}

    wanted = signature(inputs)
    for name, path in zip(names, candidates):
        theirs = model_inputs(path)
        if signature(theirs) != wanted:
            differ = sorted(set(signature(theirs).items()) ^ set(wanted.items()))
            raise StageError(
                f"candidate {name} takes other inputs than the reference ({_describe(theirs)} vs "
                f"{_describe(inputs)}; differing: {', '.join(sorted({d[0] for d in differ}))}) — "
                "e.g. an fp16 model needs keep_io_types"
            )


def _refuse_meaningless(
    params: dict[str, Any], expected: dict[str, Any], chosen: list[str]
) -> None:
    """A gate on cosine or argmax over integer outputs would pass a tagger whose labels changed: say what to
    gate instead."""
    import numpy as np

    gated = params["gate_outputs"] or chosen
    integer = [o for o in gated if np.asarray(expected[o][0]).dtype.kind in "iub"]
    wrong = [m for m in (*params["min"], *params["max"]) if m in FLOAT_ONLY]
    if integer and wrong and len(integer) == len(gated):
        raise StageError(
            f"output {', '.join(integer)} holds integers (labels or ids): {', '.join(wrong)} means nothing "
            "there — gate label_agreement or samples_unchanged (exact agreement, measured for integer outputs)"
        )


def _candidate_results(
    name: str,
    got: dict[str, list[Any]],
    feeds: list[dict],
    expected: dict[str, Any],
    chosen: list[str],
    params: dict[str, Any],
    metric: Path | None,
) -> dict[str, Any]:
    """One candidate's metrics (`got`: its outputs) against the reference's outputs (`expected`): per compared
    output, sliced where asked; each task metric's values under its type; the metric file's under "python"."""
    results: dict[str, Any] = {}
    for output in chosen:
        if output not in got:
            raise StageError(f"candidate {name} has no output '{output}' (it has {', '.join(got)})")
        ref, cand = (
            sliced(a, output, params["slices"].get(output)) for a in (expected[output], got[output])
        )
        results[output] = compare(ref, cand, feeds, params)
    for entry in task_metrics.configured(params["metrics"]):
        results[entry.metric.type] = task_metrics.run_configured(entry, expected, got, feeds)
    if metric is not None:
        results[task_metrics.FILE_GROUP] = task_metrics.run_file(
            metric, params["metric_function"], expected, got, feeds
        )
    return results


def _label_scores(
    results: dict[str, dict[str, Any]],
    names: list[str],
    candidates: list[Path],
    feeds: list[dict],
    expected: dict[str, Any],
    labels: Any,
    label_output: str,
) -> dict[str, float]:
    """With a labelled dataset: each candidate's accuracy and macro F1 on `label_output`, added to its
    results under "labels"; returns the reference's, which the candidates' are read against."""
    if labels is None:
        raise StageError(
            "label_output is set but the dataset has no labels (npz: set `labels` to the label array)"
        )
    if label_output not in expected:
        raise StageError(f"label_output: the reference has no output '{label_output}'")
    reference_scores = labelled(expected[label_output], labels)
    for name, path in zip(names, candidates):
        results[name][LABELS_GROUP] = labelled(_outputs(path, feeds)[label_output], labels)
    return reference_scores


def _outputs(path: Path, feeds: list[dict]) -> dict[str, list[Any]]:
    """Every output per feed, as numpy arrays of the model's own dtypes."""
    import numpy as np

    session = onnx_model.load_for_ort(path)
    names = [o.name for o in session.get_outputs()]
    collected: dict[str, list] = {n: [] for n in names}
    for feed in feeds:
        for name, value in zip(names, session.run(None, feed)):
            collected[name].append(np.asarray(value))
    return collected


def _describe(inputs: list[Any]) -> str:
    return ", ".join(f"{i.name}: {i.describe()}" for i in inputs)


def _round(value: Any) -> Any:
    return float(f"{value:.6g}") if isinstance(value, float) and math.isfinite(value) else value


def _report(
    results: dict[str, dict[str, Any]],
    values: dict[str, dict[str, Any]],
    reference_labelled: dict[str, float] | None,
    params: dict[str, Any],
    source: DataSource,
) -> ReportSection:
    on = f" — {source.label()}"  # every table says what data it was measured on
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
    groups = {*params["metrics"], LABELS_GROUP, task_metrics.FILE_GROUP}
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
    tables = [{"title": "Accuracy against the reference" + on, "columns": columns, "rows": rows}]
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
        rows = [["reference", reference_labelled["accuracy"], reference_labelled["f1_macro"]]]
        rows += [
            [name, per[LABELS_GROUP]["accuracy"], per[LABELS_GROUP]["f1_macro"]]
            for name, per in results.items()
        ]
        tables.append(
            {
                "title": "Against the labels" + on,
                "columns": ["model", "accuracy", "macro F1"],
                "rows": rows,
            }
        )
    return {"tables": tables}
