"""A step's input labels are written into its results (validate_accuracy names its candidates by them, and
`pick` reads those names), so they are part of the step's cache key: the same bytes checked under "c01" by a
search must never be served to a stage that asks for them as "int8"."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from ortflow.engine.contracts.registry import STAGES, Registry
from ortflow.engine.contracts.stage import (
    Artifact,
    ArtifactKind,
    Port,
    Stage,
    StageContext,
    StageResult,
)
from ortflow.engine.run.runner import execute
from ortflow.engine.run.steps import StepRunner
from ortflow.engine.store.artifacts import open_store


class Named(Stage):
    """Writes the names it sees for its inputs, as validate_accuracy writes its candidates' names."""

    type = "named"
    description = "Writes the labels of its inputs."
    inputs = (Port("parts", ArtifactKind.FILE, "files", many=True),)
    outputs = (Port("file", ArtifactKind.FILE, "the names", filename="names.txt"),)
    params_schema = {"type": "object", "additionalProperties": False, "properties": {}}

    def run(self, ctx: StageContext) -> StageResult:
        ctx.output_path("file").write_text(",".join(ctx.labels("parts")))
        return StageResult(summary="named")


class OnlyNamed(Registry):
    def __init__(self) -> None:
        super().__init__(STAGES, {})

    def __contains__(self, name: object) -> bool:
        return name == Named.type

    def get(self, name: str) -> Any:
        return Named


def test_a_step_labelled_otherwise_is_not_served_from_the_cache(tmp_path: Path):
    store = open_store(tmp_path / "cache")
    model = tmp_path / "model.onnx"
    model.write_bytes(b"the same bytes under two names")
    artifact = Artifact(hashlib.sha256(model.read_bytes()).hexdigest(), model)

    def run(parent: str, label: str) -> tuple[str, str]:
        steps = StepRunner(store, parent, functools.partial(execute, store), registry=OnlyNamed())
        result = steps.run("named", {}, {"parts": [artifact]}, {"parts": [label]})
        written = result.outputs["file"].path
        assert isinstance(written, Path)
        return written.read_text(), steps.keys[-1]

    searched, search_key = run("partial", "c01")
    asked, asked_key = run("accuracy", "int8")
    assert (searched, asked) == ("c01", "int8")
    assert asked_key != search_key
    again, again_key = run(
        "partial", "c01"
    )  # the same step, the same labels: still served from the cache
    assert (again, again_key) == ("c01", search_key)
