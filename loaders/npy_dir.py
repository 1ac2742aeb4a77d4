"""npy_dir: a folder with one sub-folder per model input, holding one .npy file per sample."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ortflow.api import (
    BATCH_AXES_PARAM,
    LIMIT_PARAM,
    SKIP_PARAM,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
    file_param,
)


@dataclass(frozen=True)
class NpyDirSettings:
    """The loader's parameters as validated against its params_schema (`path` resolved)."""

    path: Path
    skip: int | None = None
    limit: int | None = None
    batch_axes: dict[str, int | None] | None = None


class NpyDirLoader(SettingsLoader[NpyDirSettings]):
    type = "npy_dir"
    provenance = DataProvenance.REAL
    description = (
        "A folder laid out as <input name>/<sample>.npy; files pair up in sorted order. "
        "An array without the batch axis gets one (where batch_axes puts it; none for an input that is not batched)."
    )
    file_params = ("path",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": file_param("the folder"),
            "skip": SKIP_PARAM,
            "limit": LIMIT_PARAM,
            "batch_axes": BATCH_AXES_PARAM,
        },
    }

    settings = NpyDirSettings

    def samples(self, settings: NpyDirSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np

        root = settings.path
        if not root.is_dir():
            raise StageError(
                f"{root} is not a folder — npy_dir wants <input name>/<sample>.npy under it"
            )
        files = {d.name: sorted(d.glob("*.npy")) for d in sorted(root.iterdir()) if d.is_dir()}
        counts = {name: len(found) for name, found in files.items()}
        if len(set(counts.values())) > 1:
            raise StageError(
                f"{root}: the input folders hold different numbers of .npy files: {counts}"
            )
        ranks = {i.name: len(i.shape) for i in inputs}
        axes = settings.batch_axes or {}
        for index in range(min(counts.values(), default=0)):
            feed = {}
            for name, found in files.items():
                array = np.load(found[index], allow_pickle=False)
                axis = axes.get(name, 0)
                feed[name] = (
                    np.expand_dims(array, axis)
                    if axis is not None and array.ndim + 1 == ranks.get(name)
                    else array
                )
            yield feed
