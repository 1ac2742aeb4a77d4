"""Zero initial states of recurrent ops left out: ONNX's LSTM, GRU and RNN take zeros where `initial_h` (and
LSTM's `initial_c`) is not given, but exporters build those zeros in the graph from the batch dim (Shape, Gather,
Concat, ConstantOfShape, then Slice or Expand per direction), and ORT runs that chain on every call. On a small
model it is a real share of the run: arabic-name-romanizer's encoder spends 7 of its 29 folded nodes on its two
GRUs' zero states, openWakeWord's hey_mycroft 16 of 37 on its LSTMs'. The rewrite keeps the batch dim free,
so the model takes what it took before."""

from __future__ import annotations

from typing import Any

RECURRENT_STATES = {
    "LSTM": (5, 6),
    "GRU": (5,),
    "RNN": (5,),
}  # input indices of initial_h (and initial_c)
# ops whose output is all zeros wherever their data input (input 0) is: zeros reshaped, cut, copied or cast
ZERO_PRESERVING = {
    "Slice",
    "Expand",
    "Reshape",
    "Unsqueeze",
    "Squeeze",
    "Transpose",
    "Identity",
    "Cast",
    "Tile",
}  # and Concat, of zeros only


def drop_zero_states(model: Any) -> int:
    """Leave out each recurrent op's initial state that is all zeros (onnx_ir model, changed in place); what
    computed it goes with the next removal of unused nodes. Returns how many states were left out."""
    dropped = 0
    for node in model.graph.all_nodes():
        for index in (
            RECURRENT_STATES.get(node.op_type, ()) if node.domain in ("", "ai.onnx") else ()
        ):
            if index < len(node.inputs) and _all_zeros(node.inputs[index]):
                node.replace_input_with(index, None)
                dropped += 1
    return dropped


def _all_zeros(value: Any, depth: int = 16) -> bool:
    """Whether a value is zeros whatever the feeds: a constant of zeros, ConstantOfShape of zero (its default), a
    Concat of such values, or one of ZERO_PRESERVING applied to one."""
    import numpy as np

    if value is None or depth == 0:
        return False
    if value.const_value is not None:
        return not np.any(value.const_value.numpy())
    producer = value.producer()
    if producer is None:
        return False
    if producer.op_type == "ConstantOfShape":
        fill = producer.attributes.get("value")
        return fill is None or not np.any(fill.as_tensor().numpy())
    if producer.op_type == "Concat":
        return all(_all_zeros(v, depth - 1) for v in producer.inputs)
    if producer.op_type in ZERO_PRESERVING and producer.inputs:
        return _all_zeros(producer.inputs[0], depth - 1)
    return False
