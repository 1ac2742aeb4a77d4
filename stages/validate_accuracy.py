"""validate_accuracy: compare candidate models with a reference on held-out data, and gate on thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.api import (
    ArtifactKind,
    Axis,
    Better,
    Declares,
    GateFailed,
    Json,
    KnownMetrics,
    Measure,
    Port,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    bound_problems,
    counted,
    feeds_fit,
    feeds_for,
    model_inputs,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.measurement import task_metrics
from ortflow.stages.measurement.accuracy_gates import (
    Counted,
    ModelResults,
    Results,
    counted_values,
    gate_failures,
    verdict_data,
)
from ortflow.stages.measurement.accuracy_params import PARAMS_SCHEMA
from ortflow.stages.measurement.accuracy_settings import AccuracySettings
from ortflow.stages.measurement.output_comparison import (
    BUILT_IN,
    FLOAT_ONLY,
    compare,
    labelled,
    sliced,
)

if TYPE_CHECKING:  # the result documents are imported when the stage runs (engine plan stays light)
    from ortflow.api import Bounds


class ValidateAccuracy(SettingsStage[AccuracySettings]):
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
    params_schema = PARAMS_SCHEMA

    settings = AccuracySettings

    def problems(self, settings: AccuracySettings) -> list[str]:
        problems = task_metrics.problems(settings.metrics)
        if settings.outputs and set(settings.gate_outputs) - set(settings.outputs):
            problems.append(
                f"gate_outputs {sorted(set(settings.gate_outputs) - set(settings.outputs))} are not among `outputs`"
            )
        if {"accuracy", "f1_macro"} & set(settings.min) and not settings.label_output:
            problems.append(
                "gates on accuracy or f1_macro need label_output (and a dataset with labels)"
            )
        return problems

    def metrics_known(
        self, settings: AccuracySettings, files: dict[str, Path]
    ) -> dict[str, Better] | None:
        names = {n.name: n.better for n in BUILT_IN}
        names.update(task_metrics.directions(settings.metrics))
        if "metric" in files:
            try:
                names.update(task_metrics.declared(files["metric"]))
            except StageError:
                return None  # the run says what is wrong with the file
        return names

    def metric_problems(self, settings: AccuracySettings, known: KnownMetrics) -> list[str]:
        return bound_problems(settings.min, settings.max, known.own)

    def facts(self, settings: AccuracySettings) -> tuple[str, ...]:
        # Integer kernels differ between CPUs (VNNI or not), so a verdict holds for the instruction set it was
        # made on; the CPU's model name alone is the same for VNNI and non-VNNI hosts of one cloud family.
        # An installed metric's package and version too: its results are only as good as its code.
        return (
            "onnxruntime",
            "numpy",
            "cpu",
            "isa",
            *(f"plugin:ortflow.metrics:{name}" for name in settings.metrics),
        )

    def run(self, ctx: StageContext) -> StageResult:
        from ortflow.api import ReferenceValues, write_document  # documents: when run
        from ortflow.stages.measurement.accuracy_document import (
            LABELS_GROUP,
            Verdict,
            accuracy_document,
            rounded_value,
        )

        params = self.read(ctx)
        reference = onnx_model.model_file(ctx.path("reference"))
        candidates = [onnx_model.model_file(p) for p in ctx.paths("candidates")]
        names = ctx.labels("candidates") if candidates else []
        inputs = model_inputs(reference)
        _check_same_inputs(names, candidates, inputs)
        comparison = _Comparison.of(ctx, reference, inputs)
        better = {n.name: n.better for n in BUILT_IN} | task_metrics.directions(params.metrics)
        better |= task_metrics.declared(comparison.metric) if comparison.metric is not None else {}
        _refuse_meaningless(params, comparison.expected, comparison.chosen)
        results, reference_scores = _measured(ctx, comparison, names, candidates)
        groups = {*params.metrics, LABELS_GROUP, task_metrics.FILE_GROUP}
        gate_outputs = list(params.gate_outputs)
        counted = {
            n: counted_values(per, groups, gate_outputs, better) for n, per in results.items()
        }
        failures = gate_failures(counted, _gates(params))  # on the unrounded values
        # The reference against itself: what select counts for it when it is also one of the models to choose from.
        itself = comparison.results("reference", comparison.expected)
        own = counted_values(
            itself | {LABELS_GROUP: reference_scores or {}}, groups, gate_outputs, better
        )
        source = verdict_data(ctx, "data", ("candidates",))
        verdict = Verdict(
            results, counted, better, reference_scores, len(comparison.feeds), failures, source
        )
        own_values = {m: rounded_value(v) for m, (v, _) in own.items()}
        document = accuracy_document(
            verdict, params, ReferenceValues(ctx.label("reference"), own_values)
        )
        write_document(ctx.output_path("results"), document)
        shown = _shown(params, counted)
        metrics: dict[str, Json] = {
            m: {n: round(v[m][0], 6) for n, v in counted.items() if m in v} for m in shown
        }
        if failures:
            raise GateFailed("; ".join(failures), metrics=metrics, data_source=source)
        return StageResult(
            summary=_summary(counted, shown, params)
            if candidates
            else "no candidates to check: the reference's own values only",
            metrics=metrics,
            data_source=source,
        )


@dataclass(frozen=True)
class _Comparison:
    """The reference's outputs on the held-out feeds, and how a candidate's are compared with them."""

    feeds: list[dict]
    expected: dict[str, list[Any]]  # the reference's outputs, per feed
    chosen: list[str]  # the outputs compared
    settings: AccuracySettings
    metric: Path | None  # the recipe's metric file

    @classmethod
    def of(cls, ctx: StageContext, reference: Path, inputs: list[Any]) -> _Comparison:
        """Runs the reference on the feeds; every output the parameters name must be among its outputs."""
        params = ctx.settings(AccuracySettings)
        feeds = list(ctx.dataset("data").feeds(inputs, limit=params.samples))
        expected = _outputs(reference, feeds)
        chosen = list(params.outputs) or list(expected)
        missing = [o for o in [*chosen, *params.slices, *params.gate_outputs] if o not in expected]
        if missing:
            raise StageError(
                f"the reference has no output {', '.join(missing)} (it has {', '.join(expected)})"
            )
        metric = ctx.path("metric") if ctx.has("metric") else None
        return cls(feeds, expected, chosen, params, metric)

    def results(self, name: str, got: dict[str, list[Any]]) -> ModelResults:
        """One model's metrics (`got`: its outputs) against the reference's outputs: per compared output,
        sliced where asked; each task metric's values under its type; the metric file's under "python"."""
        params, expected, feeds = self.settings, self.expected, self.feeds
        results: ModelResults = {}
        for output in self.chosen:
            if output not in got:
                raise StageError(
                    f"candidate {name} has no output '{output}' (it has {', '.join(got)})"
                )
            ref, cand = (
                sliced(a, output, params.slices.get(output))
                for a in (expected[output], got[output])
            )
            results[output] = compare(ref, cand, feeds, params)
        for entry in task_metrics.configured(params.metrics):
            results[entry.metric.type] = task_metrics.run_configured(entry, expected, got, feeds)
        if self.metric is not None:
            results[task_metrics.FILE_GROUP] = task_metrics.run_file(
                self.metric, params.metric_function, expected, got, feeds
            )
        return results


def _measured(
    ctx: StageContext, comparison: _Comparison, names: list[str], candidates: list[Path]
) -> tuple[Results, dict[str, float] | None]:
    """Every candidate's results against the reference, and with label_output, the reference's scores against
    the dataset's labels (the candidates' are added to their results)."""
    params = comparison.settings
    results: Results = {}
    for done, (name, path) in enumerate(zip(names, candidates), start=1):
        results[name] = comparison.results(name, _outputs(path, comparison.feeds))
        ctx.progress(
            done, len(candidates), f"models checked on {counted(len(comparison.feeds), 'sample')}"
        )
    labels = ctx.dataset("data").labels(limit=params.samples)
    reference_scores = None
    if params.label_output:
        reference_scores = _label_scores(
            results,
            names,
            candidates,
            comparison.feeds,
            comparison.expected,
            labels,
            params.label_output,
        )
    return results, reference_scores


def _gates(params: AccuracySettings) -> Bounds:
    """The `min:`/`max:` bounds the verdict is judged on."""
    from ortflow.api import Bounds

    return Bounds(dict(params.min), dict(params.max))


def _summary(counted: dict[str, Counted], shown: list[str], params: AccuracySettings) -> str:
    summary = "; ".join(
        f"{n} " + ", ".join(f"{_label(m)} {v[m][0]:.4g}" for m in shown if m in v)
        or f"{n} (nothing measured)"
        for n, v in counted.items()
    )
    return summary + (" — gates passed" if params.min or params.max else "")


def _shown(params: AccuracySettings, counted: dict[str, Counted]) -> list[str]:
    """The metrics a run's table and records show: the gated ones, the task metrics', and cosine where measured
    (the report plots it against speed)."""
    names = [*params.min, *params.max]
    for entry in task_metrics.configured(params.metrics):
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


# -- the steps of run, in order --------------------------------------------------------------------


def _check_same_inputs(names: list[str], candidates: list[Path], inputs: list[Any]) -> None:
    """Every candidate must take the reference's inputs, since all run on the same feeds: the same names with
    the same dtypes and ranks (their order and the names of symbolic dimensions do not matter), less the inputs
    a specialized candidate froze."""

    def signature(found: list[Any]) -> dict[str, tuple[str, int]]:
        return {i.name: (i.dtype, len(i.shape)) for i in found}

    wanted = signature(inputs)
    for name, path in zip(names, candidates):
        theirs = model_inputs(path)
        if not feeds_fit(theirs, inputs):
            differ = sorted(set(signature(theirs).items()) ^ set(wanted.items()))
            raise StageError(
                f"candidate {name} takes other inputs than the reference ({_describe(theirs)} vs "
                f"{_describe(inputs)}; differing: {', '.join(sorted({d[0] for d in differ}))}) — "
                "e.g. an fp16 model needs keep_io_types"
            )


def _refuse_meaningless(
    params: AccuracySettings, expected: dict[str, list[Any]], chosen: list[str]
) -> None:
    """A gate on cosine or argmax over integer outputs would pass a tagger whose labels changed: say what to
    gate instead."""
    import numpy as np

    gated = list(params.gate_outputs) or chosen
    integer = [o for o in gated if np.asarray(expected[o][0]).dtype.kind in "iub"]
    wrong = [m for m in (*params.min, *params.max) if m in FLOAT_ONLY]
    if integer and wrong and len(integer) == len(gated):
        raise StageError(
            f"output {', '.join(integer)} holds integers (labels or ids): {', '.join(wrong)} means nothing "
            "there — gate label_agreement or samples_unchanged (exact agreement, measured for integer outputs)"
        )


def _label_scores(
    results: Results,
    names: list[str],
    candidates: list[Path],
    feeds: list[dict],
    expected: dict[str, list[Any]],
    labels: Any,
    label_output: str,
) -> dict[str, float]:
    """With a labelled dataset: each candidate's accuracy and macro F1 on `label_output`, added to its
    results under "labels"; returns the reference's, which the candidates' are read against."""
    from ortflow.stages.measurement.accuracy_document import LABELS_GROUP

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
    for feed in feeds_for(path, feeds):  # less the inputs a specialized model froze
        for name, value in zip(names, session.run(None, feed)):
            collected[name].append(np.asarray(value))
    return collected


def _describe(inputs: list[Any]) -> str:
    return ", ".join(f"{i.name}: {i.describe()}" for i in inputs)
