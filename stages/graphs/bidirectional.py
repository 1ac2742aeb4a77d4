"""A bidirectional recurrent op's two directions joined as one reshape. tf2onnx writes a Keras Bidirectional layer's
output as five nodes: each direction sliced out of Y ([seq, 2, batch, hidden]), squeezed, and the two concatenated
on the last axis. That is Y transposed to [seq, batch, 2, hidden] and reshaped to [seq, batch, 2 * hidden]: two
nodes, one of them a view. On a 0.1 ms model each node is a real share of the run (openWakeWord's hey_mycroft)."""

from __future__ import annotations

from typing import Any

RECURRENT_OPS = ("LSTM", "GRU", "RNN")
STANDARD_DOMAINS = ("", "ai.onnx")


def join_directions(model: Any) -> int:
    """Rewrite each Slice/Squeeze/Concat join of a bidirectional LSTM/GRU/RNN's Y (onnx_ir model, in place; the
    nodes left unused go with the next removal). Returns how many joins were rewritten."""
    joined, shape = 0, None
    for node in list(model.graph):
        concat = _join(node)
        if concat is None:
            continue
        shape = shape or _joined_shape(model)
        _rewrite(model, node.outputs[0], concat, shape)
        joined += 1
    return joined


def _joined_shape(model: Any) -> Any:
    """The Reshape target [0, 0, -1] every join shares, an initializer named apart from the graph's others."""
    import numpy as np
    import onnx_ir as ir

    taken = set(model.graph.initializers)
    name = next(
        n for n in (f"joined_directions_shape_{i}" for i in range(len(taken) + 1)) if n not in taken
    )
    shape = ir.Value(name=name)
    shape.const_value = ir.tensor(np.array([0, 0, -1], np.int64), name=name)
    model.graph.register_initializer(shape)
    return shape


def _join(node: Any) -> Any:
    """The Concat that joins this op's directions, forward first, where its Y feeds exactly that; else None."""
    if node.op_type not in RECURRENT_OPS or node.domain not in STANDARD_DOMAINS:
        return None
    if _attribute(node, "direction", "forward") != "bidirectional" or _attribute(node, "layout", 0):
        return None
    y = node.outputs[0]
    slices = [use.node for use in y.uses()]
    if y.is_graph_output() or len(slices) != 2:
        return None
    halves = {_direction(s): _squeezed(s) for s in slices}
    if halves.keys() != {0, 1} or None in halves.values():
        return None
    concat = _only_use(halves[0])
    if concat is None or concat is not _only_use(halves[1]) or concat.op_type != "Concat":
        return None
    if list(concat.inputs) != [halves[0], halves[1]] or concat.outputs[0].is_graph_output():
        return None
    return concat if _attribute(concat, "axis", None) in (2, -1) else None


def _direction(node: Any) -> int | None:
    """0 or 1 where the Slice takes that one direction of Y (axis 1, step 1), else None."""
    if node.op_type != "Slice" or node.domain not in STANDARD_DOMAINS or len(node.inputs) < 4:
        return None
    starts, ends, axes = (_ints(v) for v in node.inputs[1:4])
    steps = _ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if axes != [1] or steps != [1] or starts not in ([0], [1]) or ends is None:
        return None
    first = starts[0]
    return first if first + 1 <= ends[0] and (first == 1 or ends[0] == 1) else None


def _squeezed(node: Any) -> Any:
    """The output of the Squeeze of axis 1 that is the Slice's only use, else None."""
    squeeze = _only_use(node.outputs[0]) if node is not None else None
    if squeeze is None or squeeze.op_type != "Squeeze":
        return None
    axes = _ints(squeeze.inputs[1]) if len(squeeze.inputs) > 1 else None
    if axes is None:
        axes = _attribute(squeeze, "axes", None)
    return squeeze.outputs[0] if list(axes or ()) == [1] else None


def _rewrite(model: Any, y: Any, concat: Any, shape: Any) -> None:
    import onnx_ir as ir

    transpose = ir.node("Transpose", [y], attributes={"perm": [0, 2, 1, 3]})
    reshape = ir.node("Reshape", [transpose.outputs[0], shape])
    model.graph.insert_before(concat, [transpose, reshape])
    concat.outputs[0].replace_all_uses_with(reshape.outputs[0])


def _only_use(value: Any) -> Any:
    uses = list(value.uses()) if value is not None else []
    return uses[0].node if len(uses) == 1 and not value.is_graph_output() else None


def _ints(value: Any) -> list[int] | None:
    if value is None or value.const_value is None or value.is_graph_input():
        return None
    return [int(v) for v in value.const_value.numpy().reshape(-1)]


def _attribute(node: Any, name: str, default: Any) -> Any:
    found = node.attributes.get(name)
    if found is None:
        return default
    value = found.value
    return value.decode() if isinstance(value, bytes) else value
