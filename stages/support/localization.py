"""Where quantization error enters a model: run the float and the quantized model on the same samples, compare
every activation both have, and rank the float model's nodes by how much the error grows across each of them.

The building blocks are ORT's (`onnxruntime.quantization.qdq_loss_debug`: every float tensor made a graph
output, activations collected through a CalibrationDataReader). The ranking is ours: a node is a culprit
where the signal-to-quantization-noise ratio (SQNR, dB) of its output is far below that of its inputs, not
where the error is largest (that is wherever the error has accumulated, i.e. near the output). SQNR is taken
per channel (axis 1 and the last axis) and summarised by the median, because a whole-tensor ratio hides a
collapse of small values beside large ones (class scores concatenated with pixel coordinates)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

EXACT_DB = 100.0  # the SQNR of a tensor quantization did not touch (graph inputs, identical values)
DQ_SUFFIX = "_DequantizeLinear_Output"  # ORT's name for what consumers of a quantized tensor read


@dataclass(frozen=True)
class NodeError:
    node: str  # the float model's node name: what nodes_to_exclude takes
    op_type: str
    output_db: float  # SQNR of its output in the quantized model
    input_db: float  # the worst SQNR among its activation inputs
    tensor: str

    @property
    def jump_db(self) -> float:
        return self.input_db - self.output_db

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node, "op_type": self.op_type, "sqnr_db": round(self.output_db, 2),
                "input_sqnr_db": round(self.input_db, 2), "jump_db": round(self.jump_db, 2), "tensor": self.tensor}


def rank_nodes(float_model: Path, quantized: Path, feeds: Sequence[dict[str, Any]], scratch: Path) -> list[NodeError]:
    """The float model's nodes, worst jump in SQNR first. `float_model` must be the graph the quantizer was
    given (its node and tensor names are the quantized model's)."""
    import onnx

    float_acts = _activations(float_model, feeds, scratch / "float-debug.onnx")
    quant_acts = _activations(quantized, feeds, scratch / "quantized-debug.onnx")
    graph = onnx.load(str(float_model), load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    scores = {name: EXACT_DB for name in (i.name for i in graph.input)}
    for name, values in float_acts.items():
        seen = quant_acts.get(name + DQ_SUFFIX) or quant_acts.get(name)
        if seen is not None and len(seen) == len(values):
            scores[name] = channel_sqnr(values, seen)
    ranked = []
    for node in graph.node:
        outputs = [o for o in node.output if o in scores]
        if not node.name or not outputs:
            continue
        activations = [i for i in node.input if i and i not in initializers]
        inputs = [scores[i] for i in activations if i in scores]
        if activations and not inputs:
            continue  # no input matched (renamed by an optimization): where its error came from is unknown
        worst_out = min(outputs, key=scores.__getitem__)
        ranked.append(NodeError(node.name, node.op_type, scores[worst_out], min(inputs, default=EXACT_DB), worst_out))
    return sorted(ranked, key=lambda e: (-e.jump_db, e.output_db))


def _activations(model: Path, feeds: Sequence[dict[str, Any]], augmented: Path) -> dict[str, list[Any]]:
    from onnxruntime.quantization.qdq_loss_debug import collect_activations, modify_model_output_intermediate_tensors

    modify_model_output_intermediate_tensors(str(model), str(augmented))
    return collect_activations(str(augmented), list(feeds))  # it iterates the reader: a list of feeds will do


def channel_sqnr(floats: Sequence[Any], quants: Sequence[Any]) -> float:
    """SQNR in dB of `quants` against `floats` (lists of per-sample arrays): the lowest of the whole-tensor
    ratio and the median per-channel ratios along axis 1 and the last axis."""
    import numpy as np

    f = np.stack([np.asarray(a, np.float64) for a in floats])
    q = np.stack([np.asarray(a, np.float64) for a in quants])
    if f.shape != q.shape or f.dtype.kind not in "fc":
        return EXACT_DB
    q = np.nan_to_num(q, nan=0.0, posinf=0.0, neginf=0.0)
    found = [_sqnr(f, q)]
    for axis in sorted({2, f.ndim - 1}):  # [samples, *shape]: axis 2 is the tensor's axis 1
        if 2 <= axis < f.ndim and f.shape[axis] >= 2:
            ff, qq = np.moveaxis(f, axis, 0), np.moveaxis(q, axis, 0)
            found.append(float(np.median([_sqnr(a, b) for a, b in zip(ff, qq, strict=True)])))
    return min(found)


def _sqnr(f: Any, q: Any) -> float:
    import numpy as np

    signal, noise = float(np.sum(f * f)), float(np.sum((f - q) ** 2))
    if noise == 0:
        return EXACT_DB
    if signal == 0:
        return 0.0
    return max(min(10 * math.log10(signal / noise), EXACT_DB), -EXACT_DB)


def culprits_text(ranked: list[NodeError], top: int = 3) -> str:
    return "; ".join(f"{e.node} ({e.op_type}: SQNR {e.input_db:.0f} -> {e.output_db:.0f} dB)" for e in ranked[:top])
