"""python: a user function returning feeds, for any data the other loaders cannot read."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ortflow.api import (
    BATCH_AXES_PARAM,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
    file_param,
)


@dataclass(frozen=True)
class PythonSettings:
    """The loader's parameters as validated against its params_schema (file parameters resolved to paths)."""

    path: Path
    function: str
    kwargs: dict[str, object] = field(default_factory=dict)
    data: Path | None = None
    batch_axes: dict[str, int | None] | None = None
    provenance: str = DataProvenance.UNKNOWN.value


class PythonLoader(SettingsLoader[PythonSettings]):
    type = "python"
    description = (
        "Calls `function(model_inputs, **kwargs)` from a Python file and uses the feeds it yields. The file's "
        "content is part of the cache key, so editing it re-runs the stages that use the data; so is the content of "
        "`data`, a file or folder the function reads (passed as the `data` keyword). Anything else it reads is not "
        "in the key: editing it would not re-run anything."
    )
    file_params = ("path", "data")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "function"],
        "properties": {
            "path": file_param("the .py file"),
            "function": {"type": "string", "description": "name of the function in that file"},
            "kwargs": {
                "type": "object",
                "default": {},
                "description": "keyword arguments for the function",
            },
            "data": file_param(
                "a file or folder the function reads, hashed by content and passed as `data=`"
            ),
            "batch_axes": BATCH_AXES_PARAM,
            "provenance": {
                "enum": [p.value for p in DataProvenance],
                "description": "what the function's samples are, said in every accuracy verdict on them: `real` "
                "(the model's real inputs), `random` (synthetic); default `unknown`, "
                "which verdicts call unverified",
            },
        },
    }

    settings = PythonSettings

    def provenance_of(self, settings: PythonSettings) -> DataProvenance:
        """Only the user knows what their function yields: `unknown` unless the recipe says."""
        return DataProvenance(settings.provenance)

    def samples(self, settings: PythonSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        path = settings.path
        module_name = f"ortflow_user_data_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise StageError(f"{path} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise StageError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from exc
        function = getattr(module, settings.function, None)
        if not callable(function):
            names = [
                n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")
            ]
            raise StageError(
                f"{path.name} has no function '{settings.function}' (it has: {', '.join(names) or 'none'})"
            )
        extra = {"data": settings.data} if settings.data is not None else {}
        produced = function(inputs, **settings.kwargs, **extra)
        if produced is None or not hasattr(produced, "__iter__"):
            raise StageError(
                f"{path.name}: {settings.function}() returned {type(produced).__name__}, not feeds"
                " — return or yield {input name: numpy array} mappings"
            )
        yield from produced

    def caveat_of(self, settings: PythonSettings) -> str | None:
        if settings.data is not None:
            return None  # the user declared what the function reads
        return (
            f"only {Path(settings.path).name} is in its cache key: a file {settings.function}() reads is not, so "
            "editing it re-runs nothing (name the file or folder it reads as `data`)"
        )
