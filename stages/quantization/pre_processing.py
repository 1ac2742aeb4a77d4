"""`pre_process` of calibrate and quantize_static, decided by one function for both: the table must describe the
graph that is quantized, so the two stages must reach the same decision on the same model.

`auto` (the default) runs ORT's quant_pre_process and, where it fails in the ways known to be a property of the
model alone (a logic error inside ORT's symbolic shape inference: it cannot type an If/Loop node's outputs, or
an internal check fails on some other node, as on rapidocr's orientation model's Concat), goes on with the model
as it is and says so; any other failure (memory, disk, ORT's optimizer) fails the stage. The same model
therefore gives the same decision in both stages.
`true` fails on every failure (with the fix in the message); `false` never pre-processes. The table records
which graph it was calibrated on, and quantize_static refuses a table made on the other one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ortflow.api import JsonObject, StageError, TextEnum
from ortflow.api import onnx as onnx_model

PRE_PROCESS_PARAM: JsonObject = {
    "enum": ["auto", True, False],
    "default": "auto",
    "description": "run ORT's quant_pre_process first (symbolic shape inference, ORT optimization); auto: run it, and "
    "where ORT's symbolic shape inference cannot follow the model (If/Loop outputs, a failed internal "
    "check) go on without it and say so; give calibrate and quantize_static the same value",
}


class PreProcessing(TextEnum):
    APPLIED = "applied"
    SKIPPED = "skipped"  # auto, after a known failure
    OFF = "off"  # pre_process: false


@dataclass(frozen=True)
class Prepared:
    """The graph a stage calibrates or quantizes, and how it came to be."""

    model: Path
    state: PreProcessing
    cause: str = ""  # why auto skipped the pre-processing

    @property
    def pre_processed(self) -> bool:
        return self.state is PreProcessing.APPLIED

    def summary(self) -> str:
        """The stage summary's clause about it: nothing unless auto skipped it."""
        return f"pre-processing skipped (pre_process: auto): {self.cause}" if self.cause else ""

    def metrics(self) -> dict[str, str]:
        return {
            "pre_process": self.state.value,
            **({"pre_process_skipped_because": self.cause} if self.cause else {}),
        }


def prepare(source: Path, scratch: Path, setting: bool | str) -> Prepared:
    """The graph to work on for `pre_process: setting` (True, False or "auto"), pre-processed into scratch."""
    if setting is False:
        return Prepared(source, PreProcessing.OFF)
    try:
        return Prepared(
            onnx_model.pre_processed(source, scratch / "pre.onnx"), PreProcessing.APPLIED
        )
    except onnx_model.PreProcessFailed as failed:
        cause = onnx_model.MODEL_CAUSES.get(failed.failure)
        if setting is True or cause is None:
            raise
        return Prepared(source, PreProcessing.SKIPPED, cause)


def check_same_graph(table_pre_processed: bool | None, prepared: Prepared) -> None:
    """quantize_static's graph must be the one the table was calibrated on (None: a table that does not say)."""
    if table_pre_processed is None or table_pre_processed == prepared.pre_processed:
        return
    made, here = ("after", "without") if table_pre_processed else ("without", "after")
    raise StageError(
        f"the calibration table was made on the graph {made} ORT's pre-processing, and quantize_static "
        f"works on it {here} (pre_process {prepared.state}) — give calibrate and quantize_static the same "
        "model and the same pre_process (auto on both decides the same way)"
    )
