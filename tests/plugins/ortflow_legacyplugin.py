"""A plugin written against the engine's old internals (floorplan: keep this file): it keeps working for one
release, and loading it warns which imports to change. Not registered in any entry-point group (tests load
it through an EntryPoint of their own), so other tests never see its warning."""

from __future__ import annotations

from ortflow.engine.errors import StageError  # type: ignore[import-not-found]
from ortflow.engine.stage import ArtifactKind, Port, Stage, StageContext, StageResult  # type: ignore[import-not-found]


class Legacy(Stage):
    type = "legacy"
    description = (
        "Writes a text: a stage as plugins were written before ortflow.api covered everything."
    )
    outputs = (Port("file", ArtifactKind.FILE, "the text", filename="legacy.txt"),)

    def run(self, ctx: StageContext) -> StageResult:
        from ortflow.engine.ort import onnx_model  # a function-level import counts too

        if not onnx_model.TWO_GB:
            raise StageError("unreachable")
        ctx.output_path("file").write_text("legacy")
        return StageResult(summary="still works")
