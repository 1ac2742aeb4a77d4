"""How far a model's accuracy is from validate_accuracy's gates (its `min:`/`max:` bounds), as one number
a search can rank candidates by: the verdict itself stays validate_accuracy's (its gate_failures)."""

from __future__ import annotations

from typing import Any


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
