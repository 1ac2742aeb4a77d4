"""validate_accuracy: compare candidate models with a reference on held-out data, and gate on thresholds."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path
from typing import Any

from ortflow.engine.dataset import model_inputs
from ortflow.engine.errors import GateFailed, StageError
from ortflow.engine.ort import onnx_model
from ortflow.engine.stage import ArtifactKind, Port, Stage, StageContext, StageResult
from ortflow.stages.support.accuracy_gates import gate_failures

HIGHER_IS_BETTER = ("cosine_mean", "cosine_min", "top1_agreement", "topk_agreement", "accuracy", "f1_macro")
LOWER_IS_BETTER = ("max_abs", "mean_abs", "max_rel", "mean_rel")
_ITEM = r"(\.\.\.|-?\d+|-?\d*:-?\d*)"  # ..., an index, or start:stop with either part optional
SLICE = re.compile(rf"^\[\s*{_ITEM}(\s*,\s*{_ITEM})*\s*\]$")


class ValidateAccuracy(Stage):
    type = "validate_accuracy"
    version = "1"
    description = (
        "Run a reference model (usually the fp32 original) and candidates on the same held-out feeds and "
        "compare outputs: max/mean absolute and relative error, per-sample cosine (optionally after pooling, "
        "e.g. attention-masked mean for embeddings), top-1/top-k agreement, and Python metrics. An output can "
        "be sliced (e.g. the class-score rows of a detector) since one cosine over a whole output can hide real "
        "damage. `min:`/`max:` thresholds gate the run: a miss fails the stage (exit code 3) with the numbers."
    )
    inputs = (
        Port("reference", ArtifactKind.ONNX_MODEL, "the model whose outputs count as right"),
        Port("candidates", ArtifactKind.ONNX_MODEL, "the models to check", many=True),
        Port("data", ArtifactKind.DATASET, "held-out feeds"),
        Port("metric", ArtifactKind.FILE, "a .py file with `metric_function` (its content is part of the cache key)",
             optional=True),
    )
    outputs = (Port("results", ArtifactKind.METRICS, "metrics per candidate and output", filename="accuracy.json"),)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "samples": {"type": "integer", "minimum": 1, "default": 100, "description": "at most this many feeds"},
            "outputs": {"type": "array", "items": {"type": "string"}, "default": [],
                        "description": "output names to compare (default: all)"},
            "slices": {"type": "object", "additionalProperties": {"type": "string", "pattern": SLICE.pattern},
                       "default": {}, "description": "per output, a numpy slice of it to compare, e.g. {output0: '[..., 4:]'}"},
            "pooling": {"enum": ["none", "mean", "masked_mean", "first"], "default": "none",
                        "description": "reduce [batch, tokens, hidden] outputs before cosine: mean, attention-masked mean, "
                                       "or the first token"},
            "mask_input": {"type": "string", "default": "attention_mask", "description": "the input masked_mean uses"},
            "top_k": {"type": "integer", "minimum": 1, "default": 5, "description": "k for topk_agreement (argmax over the last axis)"},
            "label_output": {"type": "string",
                             "description": "with a labelled dataset: the output holding class scores, for accuracy and macro F1"},
            "min": {"type": "object", "propertyNames": {"enum": list(HIGHER_IS_BETTER)},
                    "additionalProperties": {"type": "number"}, "default": {},
                    "description": "gates: every candidate must reach these, e.g. {cosine_mean: 0.99}"},
            "max": {"type": "object", "propertyNames": {"enum": list(LOWER_IS_BETTER)},
                    "additionalProperties": {"type": "number"}, "default": {},
                    "description": "gates: every candidate must stay under these, e.g. {max_abs: 0.05}"},
            "gate_outputs": {"type": "array", "items": {"type": "string"}, "default": [],
                             "description": "outputs the gates apply to (default: every compared output)"},
            "metric_function": {"type": "string", "default": "metric",
                                "description": "in the `metric` input file: f(reference, candidate, feeds) -> {name: number}, "
                                               "outputs given as {output name: [array per feed]}"},
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        problems = []
        if params["outputs"] and set(params["gate_outputs"]) - set(params["outputs"]):
            problems.append(f"gate_outputs {sorted(set(params['gate_outputs']) - set(params['outputs']))} are not among `outputs`")
        if {"accuracy", "f1_macro"} & set(params["min"]) and not params.get("label_output"):
            problems.append("gates on accuracy or f1_macro need label_output (and a dataset with labels)")
        return problems

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        # Integer kernels differ between CPUs (VNNI or not), so a verdict holds for the instruction set it was
        # made on; the CPU's model name alone is the same for VNNI and non-VNNI hosts of one cloud family.
        return ("onnxruntime", "numpy", "cpu", "isa")

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.params
        reference = onnx_model.model_file(ctx.inputs["reference"])
        candidates = [onnx_model.model_file(p) for p in ctx.inputs["candidates"]]
        names = ctx.labels("candidates")
        inputs = model_inputs(reference)
        _check_same_inputs(names, candidates, inputs)
        feeds = list(ctx.inputs["data"].feeds(inputs, limit=params["samples"]))
        expected = _outputs(reference, feeds)
        chosen = params["outputs"] or list(expected)
        missing = [o for o in chosen + list(params["slices"]) + params["gate_outputs"] if o not in expected]
        if missing:
            raise StageError(f"the reference has no output {', '.join(missing)} (it has {', '.join(expected)})")
        metric = Path(ctx.inputs["metric"]) if "metric" in ctx.inputs else None
        results: dict[str, dict[str, Any]] = {}
        for done, (name, path) in enumerate(zip(names, candidates), start=1):
            results[name] = _candidate_results(name, path, feeds, expected, chosen, params, metric)
            ctx.progress(done, len(candidates), f"models checked on {len(feeds)} samples")
        labels = ctx.inputs["data"].labels(limit=params["samples"])
        reference_scores = None
        if params.get("label_output"):
            reference_scores = _label_scores(results, names, candidates, feeds, expected, labels, params["label_output"])
        failures = gate_failures(results, params)  # on the unrounded values
        worst = {name: min((m["cosine_mean"] for o, m in per.items() if o not in ("python", "labels")
                            and m.get("cosine_mean") is not None), default=None) for name, per in results.items()}
        rounded = {n: {o: {k: _round(v) for k, v in m.items()} for o, m in per.items()} for n, per in results.items()}
        document = {"samples": len(feeds), "results": rounded, "reference_labelled": reference_scores,
                    "gates": {"min": params["min"], "max": params["max"]}, "failures": failures,
                    "report": _report(rounded, reference_scores)}
        ctx.output_path("results").write_text(json.dumps(document, indent=2), encoding="utf-8")
        metrics = {"cosine_mean": {n: c for n, c in worst.items() if c is not None}}
        if failures:
            raise GateFailed("; ".join(failures), metrics=metrics)
        summary = ", ".join(f"{n} cosine {c:.4f}" if c is not None else f"{n} (no cosine)" for n, c in worst.items())
        return StageResult(summary=summary + (" — gates passed" if params["min"] or params["max"] else ""), metrics=metrics)


# -- the steps of run, in order --------------------------------------------------------------------


def _check_same_inputs(names: list[str], candidates: list[Path], inputs: list[Any]) -> None:
    """Every candidate must take the reference's inputs, since all run on the same feeds."""
    for name, path in zip(names, candidates):
        if model_inputs(path) != inputs:
            raise StageError(f"candidate {name} takes other inputs than the reference ({_describe(model_inputs(path))} "
                             f"vs {_describe(inputs)}) — e.g. an fp16 model needs keep_io_types")


def _candidate_results(name: str, path: Path, feeds: list[dict], expected: dict[str, Any], chosen: list[str],
                       params: dict[str, Any], metric: Path | None) -> dict[str, Any]:
    """One candidate's metrics against the reference's outputs (`expected`): per compared output, sliced
    where asked, plus the Python metric's values under "python" when a metric file is given."""
    got = _outputs(path, feeds)
    results: dict[str, Any] = {}
    for output in chosen:
        if output not in got:
            raise StageError(f"candidate {name} has no output '{output}' (it has {', '.join(got)})")
        ref, cand = (_sliced(a, output, params["slices"].get(output)) for a in (expected[output], got[output]))
        results[output] = _compare(ref, cand, feeds, params)
    if metric is not None:
        results["python"] = _python_metric(metric, params["metric_function"], expected, got, feeds)
    return results


def _label_scores(results: dict[str, dict[str, Any]], names: list[str], candidates: list[Path], feeds: list[dict],
                  expected: dict[str, Any], labels: Any, label_output: str) -> dict[str, float]:
    """With a labelled dataset: each candidate's accuracy and macro F1 on `label_output`, added to its
    results under "labels"; returns the reference's, which the candidates' are read against."""
    if labels is None:
        raise StageError("label_output is set but the dataset has no labels (npz: set `labels` to the label array)")
    if label_output not in expected:
        raise StageError(f"label_output: the reference has no output '{label_output}'")
    reference_scores = _labelled(expected[label_output], labels)
    for name, path in zip(names, candidates):
        results[name]["labels"] = _labelled(_outputs(path, feeds)[label_output], labels)
    return reference_scores


def _outputs(path: Path, feeds: list[dict]) -> dict[str, Any]:
    import numpy as np

    session = onnx_model.load_for_ort(path)
    names = [o.name for o in session.get_outputs()]
    collected: dict[str, list] = {n: [] for n in names}
    for feed in feeds:
        for name, value in zip(names, session.run(None, feed)):
            collected[name].append(np.asarray(value, dtype=np.float64) if np.asarray(value).dtype.kind in "fiu" else value)
    return {n: v for n, v in collected.items()}


def _describe(inputs: list[Any]) -> str:
    return ", ".join(f"{i.name}: {i.describe()}" for i in inputs)


def _round(value: Any) -> Any:
    return float(f"{value:.6g}") if isinstance(value, float) and math.isfinite(value) else value


def _sliced(arrays: list, output: str, text: str | None) -> list:
    if not text:
        return arrays
    try:
        picked = _apply_slice(arrays, text)
    except (IndexError, ValueError) as exc:
        raise StageError(f"slices: {text} does not fit output '{output}' of shape {arrays[0].shape}: {exc}") from exc
    if any(p.size == 0 for p in picked):
        raise StageError(f"slices: {text} selects nothing of output '{output}' (shape {arrays[0].shape})")
    return picked


def _apply_slice(arrays: list, text: str) -> list:
    parts = []
    for item in text.strip()[1:-1].split(","):
        item = item.strip()
        if item == "...":
            parts.append(Ellipsis)
        elif ":" in item:
            start, _, stop = item.partition(":")
            parts.append(slice(int(start) if start else None, int(stop) if stop else None))
        else:
            parts.append(int(item))
    return [a[tuple(parts)] for a in arrays]


def _compare(ref: list, cand: list, feeds: list[dict], params: dict[str, Any]) -> dict[str, float]:
    import numpy as np

    ref = [np.asarray(r, dtype=np.float64) for r in ref]  # bool and integer outputs compare as numbers
    cand = [np.asarray(c, dtype=np.float64) for c in cand]
    diffs = [np.abs(r - c) for r, c in zip(ref, cand)]
    # Relative error against |reference| with a floor of 1e-6: where the reference is near zero (ReLU
    # outputs) it grows large; judge such outputs by absolute error or cosine.
    scale = [np.abs(r) + 1e-6 for r in ref]
    metrics: dict[str, Any] = {  # np.max propagates NaN (Python's max would drop it depending on order)
        "max_abs": float(np.max([d.max() for d in diffs])),
        "mean_abs": float(np.mean([d.mean() for d in diffs])),
        "max_rel": float(np.max([(d / s).max() for d, s in zip(diffs, scale)])),
        "mean_rel": float(np.mean([(d / s).mean() for d, s in zip(diffs, scale)])),
    }
    pooled = [(_pool(r, f, params), _pool(c, f, params)) for r, c, f in zip(ref, cand, feeds)]
    if pooled[0][0].size // max(1, len(pooled[0][0])) > 1:  # a cosine of one number per sample says nothing
        cosines = []
        for r, c in pooled:
            for row_r, row_c in zip(r.reshape(len(r), -1), c.reshape(len(c), -1)):
                norm = np.linalg.norm(row_r) * np.linalg.norm(row_c)
                cosines.append(float(row_r @ row_c / norm) if norm else float(np.array_equal(row_r, row_c)))
        metrics["cosine_mean"] = float(np.mean(cosines))
        metrics["cosine_min"] = float(np.min(cosines))
    if ref[0].ndim >= 2 and ref[0].shape[-1] > 1:
        k = min(params["top_k"], ref[0].shape[-1])
        top1 = [np.argmax(r, -1) == np.argmax(c, -1) for r, c in zip(ref, cand)]
        topk = [np.argmax(c, -1)[..., None] == np.argsort(-r, -1)[..., :k] for r, c in zip(ref, cand)]
        metrics["top1_agreement"] = float(np.mean([t.mean() for t in top1]))
        metrics["topk_agreement"] = float(np.mean([t.any(-1).mean() for t in topk]))
    return metrics


def _labelled(outputs: list, labels: Any) -> dict[str, float]:
    """Accuracy and macro F1 of argmax(class scores) against the labels."""
    import numpy as np

    if outputs[0].ndim < 2 or outputs[0].shape[-1] < 2:
        raise StageError(f"label_output must hold one score per class (last axis of 2 or more), got shape {outputs[0].shape}")
    predicted = np.concatenate([np.argmax(o.reshape(o.shape[0], -1), axis=-1) for o in outputs])
    truth = np.asarray(labels).reshape(-1)[: len(predicted)]
    f1s = []
    for label in np.union1d(truth, predicted):  # every class seen in either, as sklearn's macro F1 does
        tp = np.sum((predicted == label) & (truth == label))
        precision = tp / max(1, np.sum(predicted == label))
        recall = tp / max(1, np.sum(truth == label))
        f1s.append(0.0 if tp == 0 else 2 * precision * recall / (precision + recall))
    return {"accuracy": round(float(np.mean(predicted == truth)), 6), "f1_macro": round(float(np.mean(f1s)), 6)}


def _pool(array: Any, feed: dict, params: dict[str, Any]) -> Any:
    import numpy as np

    mode = params["pooling"]
    if mode == "none" or array.ndim < 3:
        return array
    if mode == "first":
        return array[:, 0]
    if mode == "mean":
        return array.mean(axis=1)
    mask = feed.get(params["mask_input"])
    if mask is None:
        raise StageError(f"pooling masked_mean needs the input '{params['mask_input']}' (feeds have {', '.join(feed)})")
    weights = np.asarray(mask, dtype=np.float64)[..., None]
    return (array * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def _python_metric(path: Path, function_name: str, expected: dict, got: dict, feeds: list[dict]) -> dict[str, float]:
    module_spec = importlib.util.spec_from_file_location(f"ortflow_metric_{abs(hash(str(path)))}", path)
    if module_spec is None or module_spec.loader is None:
        raise StageError(f"the metric input {path.name} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    _user_code(function_name, module_spec.loader.exec_module, module)
    function = _user_code(function_name, getattr, module, function_name, None)
    if not callable(function):
        raise StageError(f"the metric file has no function '{function_name}' — set metric_function")
    values = _user_code(function_name, function, expected, got, feeds)
    if not isinstance(values, dict):
        raise StageError(f"{function_name}() must return a mapping of metric names to numbers")
    return {str(k): float(v) for k, v in values.items()}


def _user_code(function_name: str, call: Any, *args: Any) -> Any:
    """`call(*args)` on the metric file's code: whatever it raises becomes a StageError that names the metric
    function, except a StageError of its own (from ortflow.api), which already says what is wrong."""
    try:
        return call(*args)
    except StageError:
        raise
    except Exception as exc:
        raise StageError(f"the metric function {function_name}() failed: {type(exc).__name__}: {exc}") from exc


def _report(results: dict[str, dict[str, Any]], reference_labelled: dict[str, float] | None) -> dict[str, Any]:
    columns = ["model", "output", "cosine mean", "cosine min", "max abs", "mean abs", "argmax agrees"]
    rows = [[name, output, m.get("cosine_mean"), m.get("cosine_min"), m.get("max_abs"), m.get("mean_abs"),
             m.get("top1_agreement", "")]
            for name, per in results.items() for output, m in per.items() if output not in ("python", "labels")]
    tables = [{"title": "Accuracy against the reference", "columns": columns, "rows": rows}]
    if reference_labelled is not None:
        labelled = [["reference", reference_labelled["accuracy"], reference_labelled["f1_macro"]]]
        labelled += [[name, per["labels"]["accuracy"], per["labels"]["f1_macro"]] for name, per in results.items()]
        tables.append({"title": "Against the labels", "columns": ["model", "accuracy", "macro F1"], "rows": labelled})
    return {"tables": tables}
