"""Which MatMul weights lose most at low bit widths: each layer's error from block-wise round-to-nearest of its
weight, measured on its own outputs (||X (W - Q(W))|| / ||X W|| over a few samples' inputs X) when data is given,
else on the weight itself (||W - Q(W)|| / ||W||). Q is numpy's round-to-nearest with ORT's block layout (blocks
of `block_size` along the reduction axis, one scale per block): an estimate to rank layers by, not ORT's kernel."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import calibration_passes

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ortflow.api import Feed


def quantizable_matmuls(model: Any, excluded: Iterable[str]) -> dict[str, tuple[str, str]]:
    """MatMul node name -> (activation input, weight initializer) for MatMuls whose second input is a 2-D float
    initializer (what MatMulNBits takes), in graph order, less `excluded`."""
    from onnx import TensorProto

    weights = {
        t.name
        for t in model.graph.initializer
        if len(t.dims) == 2 and t.data_type == TensorProto.FLOAT
    }
    skip = set(excluded)
    return {
        n.name: (n.input[0], n.input[1])
        for n in model.graph.node
        if n.op_type == "MatMul" and n.name and n.name not in skip and n.input[1] in weights
    }


def round_to_nearest(weight: Any, bits: int, block_size: int, symmetric: bool) -> Any:
    """`weight` (K x N) quantized block-wise along K and dequantized."""
    import numpy as np

    rows, cols = weight.shape
    padded = -(-rows // block_size) * block_size
    blocks = np.zeros((padded, cols), np.float32)
    blocks[:rows] = weight
    blocks = blocks.reshape(-1, block_size, cols)
    if symmetric:
        top = 2 ** (bits - 1) - 1
        scale = np.abs(blocks).max(axis=1, keepdims=True) / top
        scale[scale == 0] = 1
        restored = np.clip(np.rint(blocks / scale), -top - 1, top) * scale
    else:
        low, high = blocks.min(axis=1, keepdims=True), blocks.max(axis=1, keepdims=True)
        scale = (high - low) / (2**bits - 1)
        scale[scale == 0] = 1
        restored = np.clip(np.rint((blocks - low) / scale), 0, 2**bits - 1) * scale + low
    return restored.reshape(padded, cols)[:rows]


def ranked(
    model_path: Path,
    layers: dict[str, tuple[str, str]],
    feeds: list[Feed] | None,
    bits: int,
    block_size: int,
    symmetric: bool,
) -> list[tuple[str, float]]:
    """(node, relative error at `bits`), largest first."""
    import numpy as np
    from onnx import numpy_helper

    model = onnx_model.load_graph(model_path, external_data=True)
    initializers = {t.name: t for t in model.graph.initializer}
    inputs = _layer_inputs(model_path, {a for a, _ in layers.values()}, feeds) if feeds else {}
    errors = []
    for node, (activation, weight_name) in layers.items():
        weight = numpy_helper.to_array(initializers[weight_name]).astype(np.float32)
        delta = weight - round_to_nearest(weight, bits, block_size, symmetric)
        if activation in inputs:
            x = inputs[activation].reshape(-1, weight.shape[0])
            error = np.linalg.norm(x @ delta) / max(float(np.linalg.norm(x @ weight)), 1e-12)
        else:
            error = np.linalg.norm(delta) / max(float(np.linalg.norm(weight)), 1e-12)
        errors.append((node, round(float(error), 6)))
    return sorted(errors, key=lambda item: -item[1])


def _layer_inputs(
    model_path: Path, names: set[str], feeds: list[Feed]
) -> dict[str, NDArray[np.float32]]:
    """The values of tensors `names` over `feeds`, concatenated sample after sample along a flattened axis."""
    import numpy as np
    from onnx import helper

    graph_inputs = {i.name for i in onnx_model.load_graph(model_path).graph.input}
    outputs = [helper.make_empty_tensor_value_info(n) for n in sorted(names - graph_inputs)]
    session = calibration_passes.session(
        calibration_passes.pass_model(model_path, outputs, "sensitivity.onnx")
    )
    wanted = [o.name for o in session.get_outputs()]
    found: dict[str, list[Any]] = {n: [] for n in names}
    for feed in feeds:
        for name, value in zip(wanted, session.run(wanted, feed)):
            found[name].append(np.asarray(value, np.float32).reshape(-1, value.shape[-1]))
        for name in names & graph_inputs & feed.keys():
            found[name].append(np.asarray(feed[name], np.float32).reshape(-1, feed[name].shape[-1]))
    return {n: np.concatenate(v) for n, v in found.items() if v}
