"""ORT's quant_pre_process (the graph calibration and static quantization work on), run in a child process, and
its failures sorted into the kinds users meet, each with its fix. The kind is typed, not a message to match:
a stage decides from it whether it may go on without pre-processing (`pre_process: auto`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ortflow.engine.contracts.types import TextEnum
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.ort import onnx_model
from ortflow.engine.ort.child_process import child_command


class PreProcessFailure(TextEnum):
    """Why quant_pre_process failed. CONTROL_FLOW and SHAPE_CHECK are logic errors of shape inference on the model
    itself (the same model fails the same way every time), so only they let `pre_process: auto` go on without
    pre-processing (MODEL_CAUSES)."""

    CONTROL_FLOW = "control flow"  # shape inference cannot type an If/Loop/Scan node's outputs
    INCOMPLETE_SHAPES = "incomplete shapes"
    SHAPE_CHECK = "shape inference check"  # an internal check of shape inference failed elsewhere in the graph
    DISK_FULL = "disk full"
    OTHER = "other"


class PreProcessFailed(StageError):
    """quant_pre_process failed; `failure` says how (the message says it to the user, with the fix)."""

    def __init__(self, message: str, failure: PreProcessFailure):
        super().__init__(message)
        self.failure = failure


class ChildFailure(Exception):
    """What a child process printed when it failed (its own traceback): chained under the one-line error, so
    `--debug` shows where inside ORT it broke."""


# What works when a graph ORT already optimized cannot be quantized (tested on a real CNN in test_quantization):
# skipping the pre-processing only moves the failure to quantize_static (layout nodes it cannot scale).
QUANTIZE_BEFORE_OPTIMIZING = (
    "this graph was already optimized for a CPU (graph_optimization at level `all` adds layout nodes, "
    "reorder_token_*, that quantization cannot follow): calibrate and quantize the model as exported "
    "(e.g. `in: {model: inputs.model}`), and optimize after quantizing, or let ORT optimize the quantized "
    "model when it loads it"
)
CONTROL_FLOW_CAUSE = "ORT's symbolic shape inference cannot type the outputs of this model's If/Loop nodes (control flow)"
SHAPE_CHECK_CAUSE = "ORT's symbolic shape inference fails an internal check on this model"
# The failures that are the model's own, and what `pre_process: auto` says when it goes on without pre-processing.
MODEL_CAUSES = {
    PreProcessFailure.CONTROL_FLOW: CONTROL_FLOW_CAUSE,
    PreProcessFailure.SHAPE_CHECK: SHAPE_CHECK_CAUSE,
}

# quant_pre_process in the child: its own process, so what ORT leaves in the working folder stays in scratch
_PRE_PROCESS = (
    "from onnxruntime.quantization import quant_pre_process\n"
    "quant_pre_process(sys.argv[2], sys.argv[3], auto_merge=True, save_as_external_data=bool(sys.argv[4]))\n"
)
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\w+)', re.MULTILINE)
_SHAPE_INFERENCE = "symbolic_shape_infer.py"
_CONTROL_FLOW_FRAMES = ("_infer_If", "_infer_Loop", "_infer_Scan")
# The errors of shape inference's own logic (a type it does not expect), as opposed to the machine's (memory,
# disk, a signal): the same model raises them again on every run.
_LOGIC_ERRORS = (
    "AssertionError",
    "KeyError",
    "IndexError",
    "TypeError",
    "AttributeError",
    "ValueError",
)


def pre_processed(source: Path, destination: Path) -> Path:
    """ORT's quant_pre_process (symbolic shape inference with auto_merge, then ORT's basic optimizations), the
    graph both calibration and static quantization work on. auto_merge: without it shape inference stops
    ("Incomplete symbolic shape inference") on BERT-style and YOLO-style exports.

    It runs in a child process whose working folder is the destination's (the stage's scratch folder): when
    shape inference gives up, ORT saves `sym_shape_infer_temp.onnx` and its data to the working folder, and a
    stage must never write into the user's. Its temporary folder (`pre.quant.*`, the size of the model) is
    made there too, not in $TMPDIR: the stage's work folder goes when the stage ends, or with the next run
    when this one was killed. Raises PreProcessFailed."""
    import subprocess

    large = "1" if onnx_model.total_size(source) > onnx_model.TWO_GB else ""
    done = subprocess.run(
        child_command(_PRE_PROCESS, str(source), str(destination), large),
        cwd=destination.parent,
        env=dict(os.environ, TMPDIR=str(destination.parent)),  # its pre.quant.* folder too
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        said = lines[-1] if lines else f"exit status {done.returncode}"
        failure = classify(said, done.stderr)
        if failure is PreProcessFailure.INCOMPLETE_SHAPES and _control_flow(source):
            # an If/Loop/Scan output left untyped: what follows it cannot be typed either (silero-vad's folded copy,
            # its one If left on a time dim); the model's own, as CONTROL_FLOW
            failure = PreProcessFailure.CONTROL_FLOW
        raise PreProcessFailed(
            f"quant_pre_process failed: {said} — {_hint(failure, done.stderr)}", failure
        ) from ChildFailure(done.stderr.strip())
    return destination


def _control_flow(model: Path) -> bool:
    return bool(onnx_model.op_counts(model).keys() & {"If", "Loop", "Scan"})


def classify(said: str, printed: str) -> PreProcessFailure:
    """The kind of a failure, from the child's last line (`said`) and its traceback (`printed`). CONTROL_FLOW
    only when all three hold: a logic error raised inside ORT's symbolic_shape_infer.py itself (its innermost
    frame), while it was typing an If/Loop/Scan node (such a frame of that file on the stack)."""
    frames = [(Path(file).name, function) for file, function in _FRAME.findall(printed)]
    raised_by_shape_inference = bool(frames) and frames[-1][0] == _SHAPE_INFERENCE
    error = said.split(":", 1)[0].strip()
    if "No space left" in said or "Disk quota" in said:
        return PreProcessFailure.DISK_FULL
    if "Incomplete symbolic shape inference" in said:
        return PreProcessFailure.INCOMPLETE_SHAPES
    if (
        raised_by_shape_inference
        and error in _LOGIC_ERRORS
        and any(
            file == _SHAPE_INFERENCE and function in _CONTROL_FLOW_FRAMES
            for file, function in frames
        )
    ):
        return PreProcessFailure.CONTROL_FLOW
    if error == "AssertionError" and raised_by_shape_inference:
        return PreProcessFailure.SHAPE_CHECK
    return PreProcessFailure.OTHER


def _hint(failure: PreProcessFailure, printed: str) -> str:
    skip = "set pre_process: false on calibrate and quantize_static (ortflow then quantizes the graph as it is)"
    if failure is PreProcessFailure.DISK_FULL:
        return "the disk holding the cache is full: free space there and run again"
    if failure is PreProcessFailure.INCOMPLETE_SHAPES:
        return f"ORT's symbolic shape inference cannot follow this graph. If {QUANTIZE_BEFORE_OPTIMIZING}"
    if failure is PreProcessFailure.CONTROL_FLOW:
        return (
            f"{CONTROL_FLOW_CAUSE}: set pre_process: false on calibrate and quantize_static (ortflow then quantizes "
            "the graph as it is), or leave it out (auto, the default, goes on without pre-processing and says so)"
        )
    if failure is PreProcessFailure.SHAPE_CHECK:
        where = [
            line.strip().rsplit(" in ", 1)[-1]
            for line in printed.splitlines()
            if _SHAPE_INFERENCE in line
        ]
        return (
            f"ORT's symbolic shape inference failed an internal check (in {where[-1] if where else 'it'}): {skip}, "
            "or leave it out (auto, the default, goes on without pre-processing and says so)"
        )
    return f"{skip}; --debug shows ORT's traceback"
