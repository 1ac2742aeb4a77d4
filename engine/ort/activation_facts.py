"""What `engine init` folds with the `spec` stage whatever the model's size, counted: HardSwish and HardSigmoid
written as Clip chains (x * Clip(x + 3, 0, 6) / 6, Clip(x + 3, 0, 6) / 6), as Paddle's exporter writes them, four
nodes ORT runs one by one, each breaking its NCHWc layout; and a convolution followed by a scalar Mul and Add (PP-
LCNetV3's "learnable affine block"), two passes over the feature map that ORT does not fold into the Conv."""

from __future__ import annotations

from typing import Any

# the constants of the chain: Clip(Add(x, 3), 0, 6)
_BOUNDS = (0.0, 6.0)
_SHIFT = 3.0


def hard_chains(graph: Any) -> int:
    """Clip(Add(x, 3), 0, 6) nodes at the graph's top level, the bounds and the shift constants."""
    values = _single_values(graph)
    producers = {out: node for node in graph.node for out in node.output}
    count = 0
    for node in graph.node:
        if node.op_type != "Clip" or len(node.input) < 3:
            continue
        bounds = tuple(_scalar(values, name) for name in node.input[1:3])
        shifted = producers.get(node.input[0])
        if bounds == _BOUNDS and shifted is not None and shifted.op_type == "Add":
            count += any(_scalar(values, name) == _SHIFT for name in shifted.input)
    return count


def conv_scalings(graph: Any) -> int:
    """Conv (through a BatchNormalization) -> Mul -> Add runs at the graph's top level, the Mul and the Add each
    by a single-valued initializer or Constant, each value's only consumer the next node."""
    singles = _single_values(graph).keys()
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only(name: str, op_type: str) -> Any:
        found = consumers.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op_type else None

    count = 0
    for node in graph.node:
        if node.op_type != "Conv":
            continue
        out = node.output[0]
        norm = only(out, "BatchNormalization")
        scale = only(norm.output[0] if norm is not None else out, "Mul")
        shift = only(scale.output[0], "Add") if scale is not None else None
        if shift is not None:
            count += any(i in singles for i in scale.input) and any(
                i in singles for i in shift.input
            )
    return count


def _single_values(graph: Any) -> dict[str, Any]:
    """The graph's single-valued initializers and Constant tensors, by name, as arrays."""
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if _one(t.dims)}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            if _one(node.attribute[0].t.dims):
                values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _one(dims: Any) -> bool:
    size = 1
    for dim in dims:
        size *= dim
    return size == 1


def _scalar(values: dict[str, Any], name: str) -> float | None:
    found = values.get(name)
    return None if found is None else float(found.reshape(-1)[0])
