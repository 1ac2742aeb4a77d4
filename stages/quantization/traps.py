"""Known quantization traps, found in the graph and the calibration table before quantizing: what one 8-bit
scale cannot serve, kept in float by default (quantize_static's `avoid_traps`).

- A Concat joining tensors whose calibrated ranges differ by orders of magnitude (a detector's box
  coordinates in pixels beside its class scores in 0..1): the joined tensor gets one scale, and the small
  values round to zero.
- LayerNorm and Softmax exported as primitive ops (ReduceMean, Sub, Pow, Sqrt, Div; Exp, ReduceSum, Div):
  quantizing between them cancels catastrophically (E[x^2] - E[x]^2 of rounded values) or rounds the
  normaliser; ORT keeps its own fused LayerNormalization and Softmax ops sensible, not these.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ortflow.api import JsonObject

if TYPE_CHECKING:
    from onnx import NodeProto

TRAP_PARAMS: JsonObject = {
    "avoid_traps": {
        "type": "boolean",
        "default": True,
        "description": "keep in float what one 8-bit scale cannot serve: a Concat joining ranges that differ "
        "by more than mixed_range_ratio, and LayerNorm/Softmax exported as primitive ops",
    },
    "mixed_range_ratio": {
        "type": "number",
        "minimum": 1,
        "default": 50,
        "description": "a Concat whose inputs' calibrated ranges differ by more than this is kept in float",
    },
}
# what LayerNorm is spelled with, by PyTorch (ReduceMean, Pow, Div) and by jax2tf/tf2onnx (ReduceSum times 1/n,
# Max against 0, Reshape/Expand to broadcast, Sqrt then Reciprocal then Mul)
NORM_OPS = {
    "ReduceMean",
    "ReduceSum",
    "Sub",
    "Pow",
    "Mul",
    "Add",
    "Sqrt",
    "Div",
    "Reciprocal",
    "Max",
    "Reshape",
    "Expand",
}
SOFTMAX_OPS = {"Exp", "ReduceSum", "Div", "Reshape", "Expand"}
LOGIT_OPS = {
    "Sub",
    "ReduceMax",
    "Max",
    "Reshape",
    "Expand",
    "Add",
}  # between the logits and their Exp
DEPTH = 14  # a decomposed normalisation is a dozen ops deep at most


class TrapsMetrics(TypedDict):
    """The traps as quantize_static's metrics name them (the ratios rounded to 0.1)."""

    mixed_range_concats: dict[str, float]
    decomposed_ops: dict[str, list[str]]


@dataclass
class Traps:
    mixed_concats: dict[str, float] = field(
        default_factory=dict
    )  # node -> ratio of its inputs' ranges
    decomposed: dict[str, list[str]] = field(
        default_factory=dict
    )  # "LayerNorm at <Sqrt>" -> its nodes

    def nodes(self) -> set[str]:
        return set(self.mixed_concats) | {n for group in self.decomposed.values() for n in group}

    def metrics(self) -> TrapsMetrics:
        return {
            "mixed_range_concats": {k: round(v, 1) for k, v in sorted(self.mixed_concats.items())},
            "decomposed_ops": self.decomposed,
        }


def find_traps(nodes: list[Any], ranges: dict[str, tuple[float, float]], ratio: float) -> Traps:
    """The traps in a graph (its nodes, named), with the calibrated (low, high) of its tensors."""
    producers = {o: n for n in nodes for o in n.output}
    readers: dict[str, list[Any]] = defaultdict(list)
    for node in nodes:
        for tensor in node.input:
            readers[tensor].append(node)
    traps = Traps()
    for node in nodes:
        if node.op_type == "Concat":
            widths = [ranges[i][1] - ranges[i][0] for i in node.input if i in ranges]
            if len(widths) >= 2 and min(widths) > 0 and max(widths) / min(widths) > ratio:
                traps.mixed_concats[node.name] = max(widths) / min(widths)
        elif node.op_type == "Sqrt":  # the denominator of a LayerNorm: start where it divides
            group = sorted(
                {
                    n
                    for end in _appliers(node, readers)
                    for n in _region(end, producers, NORM_OPS, ("ReduceMean", "ReduceSum"))
                }
            )
            if group:
                traps.decomposed[f"LayerNorm at {node.name}"] = group
        elif node.op_type == "ReduceSum" and any(
            n.op_type == "Exp" for i in node.input if (n := producers.get(i))
        ):
            divs = [n for n in _appliers(node, readers) if n.op_type == "Div"]
            softmax = {n for div in divs for n in _region(div, producers, SOFTMAX_OPS, ("Exp",))}
            if softmax:  # and its input: logits rounded to 8 bits move every probability (exp amplifies the step)
                exps = [
                    producers[i]
                    for i in node.input
                    if i in producers and producers[i].op_type == "Exp"
                ]
                softmax |= {
                    n.name
                    for e in exps
                    for n in _walk_back(e, producers, LOGIT_OPS, set())
                    if n is not e
                }
                traps.decomposed[f"Softmax at {node.name}"] = sorted(softmax)
    return traps


def _appliers(start: Any, readers: dict[str, list[Any]]) -> list[Any]:
    """Where a normaliser is applied: the Div reading it (through a broadcast), or the Mul after Reciprocal
    (and the Mul by a scale) that rsqrt is spelled with; the node itself if neither is near."""
    found, frontier = [], [(start, 0)]
    while frontier:
        node, depth = frontier.pop()
        for reader in (r for o in node.output for r in readers[o]):
            if reader.op_type == "Div" or (reader.op_type == "Mul" and depth >= 1):
                found.append(reader)
            if reader.op_type in ("Reciprocal", "Mul", "Reshape", "Expand") and depth < 3:
                frontier.append((reader, depth + 1))
    return found or [start]


def _region(
    end: NodeProto, producers: dict[str, NodeProto], allowed: set[str], anchor: tuple[str, ...]
) -> list[str]:
    """The nodes of the decomposed op ending at `end`: walking back through `allowed` ops, but not past the
    input of an `anchor` op (the tensor being normalised, whose producer belongs to the layer before).
    Empty when no anchor op is found."""
    first = _walk_back(end, producers, allowed, stop=set())
    stop = {n.input[0] for n in first if n.op_type in anchor and n.input}
    if not stop:
        return []
    # E[x^2] averages x*x: its anchor reads a square of x, which is inside; x itself is where to stop
    inside = {id(n) for n in first}
    stop = {
        t
        for t in stop
        if not (t in producers and id(producers[t]) in inside and set(producers[t].input) & stop)
    }
    return sorted(n.name for n in _walk_back(end, producers, allowed, stop))


def _walk_back(
    end: NodeProto, producers: dict[str, NodeProto], allowed: set[str], stop: set[str]
) -> list[NodeProto]:
    found, frontier = {id(end): end}, [(end, 0)]
    while frontier:
        node, depth = frontier.pop()
        if depth >= DEPTH:
            continue
        for tensor in node.input:
            parent = producers.get(tensor)
            if (
                tensor in stop
                or parent is None
                or parent.op_type not in allowed
                or id(parent) in found
            ):
                continue
            found[id(parent)] = parent
            frontier.append((parent, depth + 1))
    return list(found.values())


def table_ranges(table: Any) -> dict[str, tuple[float, float]]:
    """(low, high) of each tensor in ORT's TensorsData."""
    found = {}
    for name, data in table.data.items():
        try:
            low, high = data.range_value
        except (
            AttributeError,
            TypeError,
            ValueError,
        ):  # a table of another method: no range, no check
            continue
        found[name] = (float(low), float(high))
    return found
