"""random: seeded synthetic feeds shaped from the model's own input metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ortflow.api import (
    BATCH_AXES_PARAM,
    MAX_FEED_VALUES,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
)


@dataclass(frozen=True)
class RandomSettings:
    """The loader's parameters as validated against its params_schema (defaults filled in)."""

    samples: int = 16
    seed: int = 0
    dims: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, list[int]] | None = None
    batch_axes: dict[str, int | None] | None = None
    ranges: dict[str, list[float]] = field(default_factory=dict)


class RandomLoader(SettingsLoader[RandomSettings]):
    type = "random"
    provenance = DataProvenance.RANDOM
    description = (
        "Seeded random feeds built from the model's input names, dtypes and shapes. Symbolic axes take their "
        "size from `dims` (a leading symbolic axis defaults to 1). Good for timing, not for calibration. "
        f"At most {MAX_FEED_VALUES:,} values an input a sample (1 GiB of float32)."
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 16,
                "description": "how many feeds",
            },
            "seed": {"type": "integer", "default": 0, "description": "random seed"},
            "dims": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 1},
                "default": {},
                "description": "sizes of symbolic axes by name, e.g. {batch: 1, sequence: 128}",
            },
            "shapes": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 0},
                },
                "description": "per input, its whole shape (for axes with no name, and [] for a scalar), e.g. {state: [2, 1, 128]}",
            },
            "batch_axes": BATCH_AXES_PARAM,
            "ranges": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 2,
                    "maxItems": 2,
                },
                "default": {},
                "description": "per input [low, high) for values, e.g. {input_ids: [0, 30522], attention_mask: [1, 2]}",
            },
        },
    }

    settings = RandomSettings

    def samples(self, settings: RandomSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np

        for name, (low, high) in settings.ranges.items():
            if low >= high:
                raise StageError(
                    f"ranges: {name}: [{low}, {high}) is empty — the upper bound is excluded, e.g. [1, 2] gives 1"
                )
        rng = np.random.default_rng(settings.seed)
        shapes = {
            i.name: self._shape(i, settings.dims, (settings.shapes or {}).get(i.name))
            for i in inputs
        }
        for name, shape in shapes.items():
            values = int(np.prod(shape, dtype=object))  # exact: a product past 2**63 must not wrap
            if values > MAX_FEED_VALUES:
                raise StageError(
                    f"random: input '{name}' would hold {values:,} values a sample (shape {list(shape)}), over "
                    f"the loader's bound of {MAX_FEED_VALUES:,} (1 GiB of float32) — give it smaller `dims` or "
                    "`shapes`, or use a dataset of real samples (npz, images, text)"
                )
        for _ in range(settings.samples):
            feed = {}
            for spec in inputs:
                low, high = settings.ranges.get(
                    spec.name, [0, 100] if spec.dtype != "float32" else [-1, 1]
                )
                if np.issubdtype(np.dtype(spec.dtype), np.integer):
                    feed[spec.name] = rng.integers(
                        int(low), int(high), size=shapes[spec.name]
                    ).astype(spec.dtype)
                elif spec.dtype == "bool":
                    feed[spec.name] = rng.random(shapes[spec.name]) < 0.5
                else:
                    feed[spec.name] = rng.uniform(low, high, size=shapes[spec.name]).astype(
                        spec.dtype
                    )
            yield feed

    @staticmethod
    def _shape(spec: ModelInput, dims: dict[str, int], given: list[int] | None) -> tuple[int, ...]:
        if given is not None:
            if len(given) != len(spec.shape):
                raise StageError(
                    f"shapes: {spec.name} is given {len(given)} axes, the model's input has {len(spec.shape)} "
                    f"({spec.describe()})"
                )
            return tuple(given)
        shape = []
        for axis, dim in enumerate(spec.shape):
            if isinstance(dim, int) and dim > 0:
                shape.append(dim)
            elif isinstance(dim, str) and dim in dims:
                shape.append(dims[dim])
            elif axis == 0:
                shape.append(1)
            else:
                label = f"'{dim}'" if dim else "with no name"
                fix = (
                    f"dims: {{{dim}: 128}}"
                    if dim
                    else f"shapes: {{{spec.name}: [...]}} (its whole shape, by position)"
                )
                raise StageError(
                    f"input '{spec.name}' ({spec.describe()}) has a symbolic axis {label} at position {axis}"
                    f" — give its size, e.g. {fix}"
                )
        return tuple(shape)
