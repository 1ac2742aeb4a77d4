"""select's parameters: the objective (minimize or maximize a metric) and the constraints (its
`params_schema`), and the same read typed (SelectSettings, what the stage reads with ctx.settings())."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ortflow.api import JsonObject

# the schema of `min` and `max` (a schema fragment: JSON)
BOUNDS: JsonObject = {
    "type": "object",
    "additionalProperties": {"type": "number"},
    "default": {},
}


@dataclass(frozen=True)
class SelectSettings:
    """Select's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    minimize: str | None = None  # None: p50_ms, when maximize is not set either
    maximize: str | None = None
    min: Mapping[str, float] = field(default_factory=dict)
    max: Mapping[str, float] = field(default_factory=dict)

    def goal(self) -> tuple[str, str]:
        """(minimize or maximize, the objective)."""
        return (
            ("maximize", self.maximize)
            if self.maximize
            else ("minimize", self.minimize or "p50_ms")
        )


PARAMS_SCHEMA: JsonObject = {
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
