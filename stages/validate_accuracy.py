"""validate_accuracy: compare candidate models with a reference on held-out data, and gate on thresholds."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

from engine import onnx_model
from engine.dataset import model_inputs
from engine.errors import GateFailed, StageError
from engine.stage import ArtifactKind, Port, Stage, StageContext, StageResult

HIGHER_IS_BETTER = ("cosine_mean", "cosine_min", "top1_agreement", "topk_agreement", "accuracy", "f1_macro")
LOWER_IS_BETTER = ("max_abs", "mean_abs", "max_rel", "mean_rel")
SLICE = re.compile(r"^\[\s*(\.\.\.|-?\d*(:-?\d*)?)(\s*,\s*(\.\.\.|-?\d*(:-?\d*)?))*\s*\]$")


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
                        "description": "reduce [batch, tokens, hidden] outputs before cosine: mean, attention-masked mean, or the first token"},
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

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "numpy")

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.params
        reference = onnx_model.model_file(ctx.inputs["reference"])
        candidates = [onnx_model.model_file(p) for p in ctx.inputs["candidates"]]
        names = [ctx.label("candidates", i) for i in range(len(candidates))]
        feeds = list(ctx.inputs["data"].feeds(model_inputs(reference), limit=params["samples"]))
        expected = _outputs(reference, feeds)
        chosen = params["outputs"] or list(expected)
        missing = [o for o in chosen + list(params["slices"]) if o not in expected]
        if missing:
            raise StageError(f"the reference has no output {', '.join(missing)} (it has {', '.join(expected)})")
        results: dict[str, dict[str, Any]] = {}
        for name, path in zip(names, candidates):
            got = _outputs(path, feeds)
            results[name] = {}
            for output in chosen:
                if output not in got:
                    raise StageError(f"candidate {name} has no output '{output}' (it has {', '.join(got)})")
                ref, cand = (_sliced(a, params["slices"].get(output)) for a in (expected[output], got[output]))
                results[name][output] = _compare(ref, cand, feeds, params)
            if "metric" in ctx.inputs:
                results[name]["python"] = _python_metric(Path(ctx.inputs["metric"]), params["metric_function"], expected, got, feeds)
        labels = ctx.inputs["data"].labels(limit=params["samples"])
        reference_scores = None
        if params.get("label_output"):
            if labels is None:
                raise StageError("label_output is set but the dataset has no labels (npz: set `labels` to the label array)")
            if params["label_output"] not in expected:
                raise StageError(f"label_output: the reference has no output '{params['label_output']}'")
            reference_scores = _labelled(expected[params["label_output"]], labels)
            for name, path in zip(names, candidates):
                results[name]["labels"] = _labelled(_outputs(path, feeds)[params["label_output"]], labels)
        failures = _gate(results, params)
        document = {"samples": len(feeds), "results": results, "reference_labelled": reference_scores, "gates": {"min": params["min"], "max": params["max"]},
                    "failures": failures, "report": _report(results, reference_scores)}
        ctx.output_path("results").write_text(json.dumps(document, indent=2), encoding="utf-8")
        if failures:
            raise GateFailed("; ".join(failures))
        worst = {name: min(m.get("cosine_mean", 1.0) for o, m in per.items() if o not in ("python", "labels"))
                 for name, per in results.items()}
        summary = ", ".join(f"{n} cosine {c:.4f}" for n, c in worst.items()) + (" — gates passed" if params["min"] or params["max"] else "")
        return StageResult(summary=summary, metrics={"cosine_mean": worst})


def _outputs(path: Path, feeds: list[dict]) -> dict[str, Any]:
    import numpy as np

    session = onnx_model.load_for_ort(path)
    names = [o.name for o in session.get_outputs()]
    collected: dict[str, list] = {n: [] for n in names}
    for feed in feeds:
        for name, value in zip(names, session.run(None, feed)):
            collected[name].append(np.asarray(value, dtype=np.float64) if np.asarray(value).dtype.kind in "fiu" else value)
    return {n: v for n, v in collected.items()}


def _sliced(arrays: list, text: str | None) -> list:
    if not text:
        return arrays
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

    diffs = [np.abs(r - c) for r, c in zip(ref, cand)]
    scale = [np.abs(r) + 1e-6 for r in ref]
    pooled = [(_pool(r, f, params), _pool(c, f, params)) for r, c, f in zip(ref, cand, feeds)]
    cosines = []
    for r, c in pooled:
        for row_r, row_c in zip(r.reshape(len(r), -1), c.reshape(len(c), -1)):
            norm = np.linalg.norm(row_r) * np.linalg.norm(row_c)
            cosines.append(float(row_r @ row_c / norm) if norm else float(np.array_equal(row_r, row_c)))
    metrics = {
        "max_abs": float(max(d.max() for d in diffs)),
        "mean_abs": float(np.mean([d.mean() for d in diffs])),
        "max_rel": float(max((d / s).max() for d, s in zip(diffs, scale))),
        "mean_rel": float(np.mean([(d / s).mean() for d, s in zip(diffs, scale)])),
        "cosine_mean": float(np.mean(cosines)),
        "cosine_min": float(np.min(cosines)),
    }
    if ref[0].ndim >= 2 and ref[0].shape[-1] > 1:
        k = min(params["top_k"], ref[0].shape[-1])
        top1 = [np.argmax(r, -1) == np.argmax(c, -1) for r, c in zip(ref, cand)]
        topk = [np.argmax(c, -1)[..., None] == np.argsort(-r, -1)[..., :k] for r, c in zip(ref, cand)]
        metrics["top1_agreement"] = float(np.mean([t.mean() for t in top1]))
        metrics["topk_agreement"] = float(np.mean([t.any(-1).mean() for t in topk]))
    return {k: round(v, 6) for k, v in metrics.items()}


def _labelled(outputs: list, labels: Any) -> dict[str, float]:
    """Accuracy and macro F1 of argmax(class scores) against the labels."""
    import numpy as np

    predicted = np.concatenate([np.argmax(o.reshape(o.shape[0], -1), axis=-1) for o in outputs])
    truth = np.asarray(labels).reshape(-1)[: len(predicted)]
    f1s = []
    for label in np.unique(truth):
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
    try:
        module_spec.loader.exec_module(module)
        function = getattr(module, function_name, None)
        if not callable(function):
            raise StageError(f"the metric file has no function '{function_name}' — set metric_function")
        values = function(expected, got, feeds)
    except StageError:
        raise
    except Exception as exc:
        raise StageError(f"the metric function {function_name}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(values, dict):
        raise StageError(f"{function_name}() must return a mapping of metric names to numbers")
    return {str(k): float(v) for k, v in values.items()}


def _gate(results: dict[str, dict[str, Any]], params: dict[str, Any]) -> list[str]:
    failures = []
    for name, per_output in results.items():
        for output, metrics in per_output.items():
            if output == "python" or (params["gate_outputs"] and output not in params["gate_outputs"] and output != "labels"):
                continue
            for metric, bound in params["min"].items():
                if metric in metrics and metrics[metric] < bound:
                    failures.append(f"{name} {output}: {metric} {metrics[metric]:.4f} < min {bound}")
            for metric, bound in params["max"].items():
                if metric in metrics and metrics[metric] > bound:
                    failures.append(f"{name} {output}: {metric} {metrics[metric]:.4f} > max {bound}")
    return failures


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
