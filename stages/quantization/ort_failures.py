"""What a failure inside ORT's quantizers means and what to do, for the failures users meet on real models.
ORT's own messages name an internal step ("The truth value of an array ... is ambiguous"); the hint names the
setting that avoids it. The full chained traceback stays available with --debug."""

from __future__ import annotations

from ortflow.api import StageError
from ortflow.api.onnx import QUANTIZE_BEFORE_OPTIMIZING, first_line

FOLD_FIRST = "fold constants first (a graph_optimization stage at level basic before quantizing)"
KNOWN = (
    (
        "Quantization parameters are not specified",
        "the calibration table lacks that tensor: calibrate the same model you quantize, with the same pre_process",
    ),
    ("reorder_token", QUANTIZE_BEFORE_OPTIMIZING),
    (
        "truth value of an array",
        "ORT's per-channel int32-bias adjustment met a bias that is not one value per output channel (e.g. a [1, N] "
        "Gemm bias): set extra_options: {QDQDisableWeightAdjustForInt32Bias: true}, or per_channel: false",
    ),
    (
        "DequantizeLinear_Output to be an initializer",
        "this model is already quantized (its weights come out of DequantizeLinear nodes): quantize the float model it "
        "was made from",
    ),
    (
        "to be an initializer",
        f"ORT's quantizer needs that input to be a constant (an initializer), and here it is computed: {FOLD_FIRST}, "
        "or keep the node in float (nodes_to_exclude)",
    ),
    (
        "Unable to find data type for weight_name",
        "ORT cannot tell a weight's type on this graph: run shape inference first (pre_process: true), or "
        f"{FOLD_FIRST}",
    ),
)


def quantizer_failed(tool: str, exc: BaseException) -> StageError:
    """The one-line StageError for `tool` (e.g. "quantize_static") failing with `exc`; chain it with `from exc`.
    `exc` may be float_retry's RetriesSpent: the last failure after nodes were kept float for the others."""
    from ortflow.stages.quantization.float_retry import RetriesSpent

    tried = ""
    if isinstance(exc, RetriesSpent):
        names = ", ".join(k.node for k in exc.kept[:4]) + ("" if len(exc.kept) <= 4 else ", ...")
        tried = f" (after keeping {len(exc.kept)} node(s) float one failure at a time: {names})"
        exc = exc.original
    text = str(exc)
    hint = next((fix for pattern, fix in KNOWN if pattern in text), "")
    said = f"{type(exc).__name__}: {first_line(exc)}"
    return StageError(
        f"{tool} failed{tried}: {said}"
        + (f" — {hint}" if hint else " — --debug shows ORT's traceback")
    )


def after_retries(tool: str, exc: BaseException) -> BaseException:
    """What a quantize stage raises once float_retry gave up: ortflow's own StageError as it is (e.g. the
    checker's), anything else from ORT as quantizer_failed's one line."""
    from ortflow.stages.quantization.float_retry import RetriesSpent

    return (
        exc
        if isinstance(exc, StageError) and not isinstance(exc, RetriesSpent)
        else quantizer_failed(tool, exc)
    )
