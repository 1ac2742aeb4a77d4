"""npz: one .npz file whose arrays are named after the model's inputs, samples along the first axis."""

from __future__ import annotations

from typing import Any, Iterator

from ortflow.engine.dataset import LIMIT_PARAM, DatasetLoader, Feed, ModelInput, file_param
from ortflow.engine.errors import StageError


class NpzLoader(DatasetLoader):
    type = "npz"
    description = "Arrays named after the model's inputs in one .npz file; sample i is row i of every array."
    file_params = ("path",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": file_param("the .npz file"),
            "limit": LIMIT_PARAM,
            "labels": {"type": "string", "description": "an array of ground-truth labels (not fed to the model)"},
        },
    }

    def feeds(self, params: dict[str, Any], inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np

        name = params["path"].name
        try:
            with np.load(params["path"], allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except (OSError, ValueError) as exc:
            raise StageError(f"cannot read {name} as an .npz of numeric arrays: {exc}") from exc
        scalars = sorted(key for key, a in arrays.items() if a.ndim == 0)
        if scalars:
            raise StageError(f"{name}: {', '.join(scalars)} hold single values; each array needs samples along its first axis")
        counts = {key: len(a) for key, a in arrays.items()}
        if len(set(counts.values())) > 1:
            raise StageError(f"{name}: arrays have different sample counts {counts}")
        arrays.pop(params.get("labels"), None)
        for i in range(min(counts.values(), default=0)):
            yield {key: a[i : i + 1] for key, a in arrays.items()}

    def labels(self, params: dict[str, Any]) -> Any:
        import numpy as np

        if not params.get("labels"):
            return None
        with np.load(params["path"], allow_pickle=False) as archive:
            if params["labels"] not in archive.files:
                raise StageError(f"{params['path'].name} has no array '{params['labels']}' (it has {', '.join(archive.files)})")
            return archive[params["labels"]]
