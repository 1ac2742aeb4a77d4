"""validate_accuracy's gates (its `min:`/`max:` bounds) on a results document: the verdict (gate_failures),
shared by validate_accuracy and quantize_search so both judge alike, and how far a model is from the gates
as one number a search can rank candidates by."""

from __future__ import annotations

import math
from typing import Any

from ortflow.engine.errors import StageError


def gated_values(per_output: dict[str, dict[str, Any]], accuracy: dict[str, Any]) -> dict[str, float]:
    """Each gated metric's worst value over the outputs the gates apply to (`per_output`: one model's
    entry in a validate_accuracy results document; `accuracy`: its parameters, gates included)."""
    gated = accuracy.get("gate_outputs") or []
    found: dict[str, float] = {}
    for bounds, worst in ((accuracy.get("min") or {}, min), (accuracy.get("max") or {}, max)):
        for metric in bounds:
            values = [m[metric] for output, m in per_output.items() if output != "python"
                      and (not gated or output in gated or output == "labels") and m.get(metric) is not None]
            if values:
                found[metric] = worst(values)
    return found


def margin(values: dict[str, float], accuracy: dict[str, Any]) -> float | None:
    """The smallest margin over the gates, relative to each bound: >= 0 when all are met; None when no
    gated metric was measured."""
    margins = [(values[m] - b) / (abs(b) or 1) for m, b in (accuracy.get("min") or {}).items() if m in values]
    margins += [(b - values[m]) / (abs(b) or 1) for m, b in (accuracy.get("max") or {}).items() if m in values]
    return round(min(margins), 6) if margins else None


def gate_failures(results: dict[str, dict[str, Any]], params: dict[str, Any]) -> list[str]:
    """Every miss, as `model output: metric value < min bound`. A gate no gated output could be measured
    by is an error, not a pass; a non-finite value (NaN from a broken model) always fails."""
    failures = []
    checked: set[str] = set()
    for name, per_output in results.items():
        for output, metrics in per_output.items():
            if output == "python" or (params["gate_outputs"] and output not in params["gate_outputs"] and output != "labels"):
                continue
            for bounds, worse in ((params["min"], lambda v, b: v < b), (params["max"], lambda v, b: v > b)):
                for metric, bound in bounds.items():
                    if metric not in metrics or metrics[metric] is None:
                        continue
                    checked.add(metric)
                    value = metrics[metric]
                    if not math.isfinite(value):
                        failures.append(f"{name} {output}: {metric} is {value} (the model produced NaN or inf)")
                    elif worse(value, bound):
                        sign = "<" if bounds is params["min"] else ">"
                        label = "min" if bounds is params["min"] else "max"
                        failures.append(f"{name} {output}: {metric} {value:.6g} {sign} {label} {bound}")
    unmeasured = sorted((set(params["min"]) | set(params["max"])) - checked)
    if unmeasured and results:
        raise StageError(f"no gated output yields {', '.join(unmeasured)} (cosine needs more than one value per sample, "
                         "agreement a last axis of 2 or more, accuracy and f1_macro a label_output) — gate other metrics or outputs")
    return failures
