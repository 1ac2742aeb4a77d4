"""npz: one .npz file whose arrays are named after the model's inputs, samples along the first axis."""

from __future__ import annotations

from typing import Any, Iterator

from engine.dataset import DatasetLoader, Feed, ModelInput
from engine.errors import StageError


class NpzLoader(DatasetLoader):
    type = "npz"
    description = "Arrays named after the model's inputs in one .npz file; sample i is row i of every array."
    file_params = ("path",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": {"description": "the .npz file (relative to the recipe, or {package, file})"},
            "limit": {"type": "integer", "minimum": 1, "description": "use only the first N samples"},
        },
    }

    def feeds(self, params: dict[str, Any], inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np

        try:
            archive = np.load(params["path"], allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise StageError(f"cannot read {params['path'].name} as .npz: {exc}") from exc
        with archive:
            arrays = {name: archive[name] for name in archive.files}
        counts = {name: len(a) for name, a in arrays.items()}
        if len(set(counts.values())) > 1:
            raise StageError(f"{params['path'].name}: arrays have different sample counts {counts}")
        total = min(counts.values(), default=0)
        for i in range(min(total, params.get("limit") or total)):
            yield {name: a[i : i + 1] for name, a in arrays.items()}
