"""HardSwish and HardSigmoid written as Clip chains (x * Clip(x + 3, 0, 6) / 6, Clip(x + 3, 0, 6) / 6), as Paddle's
exporter writes them: counted for `engine init`, which folds them back into the ops (the `spec` stage) whatever the
model's size, since ORT runs each chain as four nodes that break its NCHWc layout."""

from __future__ import annotations

from typing import Any

# the constants of the chain: Clip(Add(x, 3), 0, 6)
_BOUNDS = (0.0, 6.0)
_SHIFT = 3.0


def hard_chains(graph: Any) -> int:
    """Clip(Add(x, 3), 0, 6) nodes at the graph's top level, the bounds and the shift constants."""
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if _one(t.dims)}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            if _one(node.attribute[0].t.dims):
                values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
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


def _one(dims: Any) -> bool:
    size = 1
    for dim in dims:
        size *= dim
    return size == 1


def _scalar(values: dict[str, Any], name: str) -> float | None:
    found = values.get(name)
    return None if found is None else float(found.reshape(-1)[0])
