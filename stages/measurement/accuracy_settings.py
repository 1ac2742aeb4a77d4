"""validate_accuracy's parameters read typed: a frozen dataclass standing for accuracy_params.PARAMS_SCHEMA
(settings_problems holds the two together), which the stage's hooks, the output comparisons and the verdict read
by attribute rather than by key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ortflow.api import Json


@dataclass(frozen=True)
class AccuracySettings:
    """ValidateAccuracy's parameters (accuracy_params.PARAMS_SCHEMA)."""

    samples: int = 100
    outputs: tuple[str, ...] = ()
    slices: Mapping[str, str] = field(default_factory=dict)
    pooling: str = "none"
    mask_input: str = "attention_mask"
    top_k: int = 5
    label_output: str | None = None
    # metric type -> its own `with:` block: the user's free JSON until that metric's schema checks it
    # (task_metrics.problems), so it stays Json here
    metrics: Mapping[str, Json] = field(default_factory=dict)
    min: Mapping[str, float] = field(default_factory=dict)
    max: Mapping[str, float] = field(default_factory=dict)
    gate_outputs: tuple[str, ...] = ()
    metric_function: str = "metric"
