"""What an ONNX file says about itself, read without running it: its inputs and outputs (dtype, fixed and
symbolic dims), op types, which ops hold the weights, the `If` nodes whose branches hold part of the network
(and the inputs that decide them), opset, size and external data. `engine init` reads these facts to write a
recipe; what they likely mean (token ids, an image, a recurrent state, a detection head) is decided there."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ortflow.engine.ort.activation_facts import conv_scalings, hard_chains
from ortflow.engine.ort.onnx_model import external_data_files, load_graph, total_size

if TYPE_CHECKING:
    from onnx import GraphProto, NodeProto, TensorProto

Dim = int | str | None  # a fixed size, a symbolic name, or unknown
QUANTIZED_OPS = (
    "DequantizeLinear",
    "QuantizeLinear",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "ConvInteger",
    "QLinearConv",
    "QLinearMatMul",
    "MatMulNBits",
    "QAttention",
    "DynamicQuantizeMatMul",
    "DynamicQuantizeLSTM",
    "QGemm",
)
# values: an int8 table of a few entries (a lookup, a shape) is not a quantized weight
MIN_WEIGHT = 64
_INTEGER_WEIGHT_TYPES = {2, 3, 21, 22}  # TensorProto UINT8, INT8, UINT4, INT4


@dataclass(frozen=True)
class TensorFact:
    """One graph input or output."""

    name: str
    dtype: str  # numpy's name: float32, int64, ...
    shape: tuple[Dim, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_scalar(self) -> bool:
        return not self.shape

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith(("float", "bfloat"))

    @property
    def is_integer(self) -> bool:
        return self.dtype.startswith(("int", "uint"))

    def symbolic_axes(self) -> list[int]:
        return [
            axis for axis, dim in enumerate(self.shape) if not (isinstance(dim, int) and dim > 0)
        ]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None or d == 0 else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype} [{dims}]"


@dataclass(frozen=True)
class BranchFact:
    """A top-level `If` node. ORT's quantization and calibration see only the top-level graph, so the nodes and
    weights inside its branches are out of their reach until the model is specialized on what decides it."""

    node: str  # the node's name (its first output's where it has none)
    deciding_inputs: tuple[
        str, ...
    ]  # the graph inputs its condition is computed from (empty: from constants only)
    condition: str  # e.g. "sr == 16000" where it is one input compared with a constant, else "a value computed from ..."
    nodes_inside: int  # nodes in its branches, nested subgraphs included
    weights_inside: int  # weight elements (initializers and Constant tensors) in its branches


@dataclass(frozen=True)
class ModelFacts:
    path: Path
    inputs: tuple[TensorFact, ...]
    outputs: tuple[TensorFact, ...]
    op_counts: Counter = field(default_factory=Counter)
    opset: int = 0
    size_bytes: int = 0
    external_data: tuple[str, ...] = ()
    producer: str = ""
    node_total: int = 0  # every node, those inside If/Loop/Scan subgraphs too
    weight_total: int = 0  # elements of every initializer and Constant tensor, subgraphs too
    weights_by_op: Counter = field(default_factory=Counter)  # weight elements each op type consumes
    branches: tuple[BranchFact, ...] = ()  # top-level If nodes
    # float16 initializers, Constant tensors and Cast(to=float16) nodes, subgraphs too: a float16 model, or
    # float16 islands inside a float one (a converter's Cast before an LSTM), which CPUs run slowly
    float16_parts: int = 0
    integer_weights: int = 0  # initializers of 8 bits or fewer holding at least MIN_WEIGHT values: weights quantized already
    # what init's spec stage folds at any size (engine.ort.activation_facts): HardSwish/HardSigmoid written as
    # Clip(x + 3, 0, 6) chains, and a Conv's scalar Mul and Add
    hard_chains: int = 0
    conv_scalings: int = 0

    def weight_share(self, *op_types: str) -> float:
        """The share of the model's weights consumed by these op types (0 for a model without weights)."""
        held = sum(self.weights_by_op.get(op, 0) for op in op_types)
        return held / self.weight_total if self.weight_total else 0.0

    @property
    def branch_node_share(self) -> float:
        return (
            sum(b.nodes_inside for b in self.branches) / self.node_total if self.node_total else 0.0
        )

    @property
    def branch_weight_share(self) -> float:
        return (
            sum(b.weights_inside for b in self.branches) / self.weight_total
            if self.weight_total
            else 0.0
        )

    @property
    def already_quantized(self) -> bool:
        """Quantized before ortflow saw it: integer weights (e.g. int8 ones turned to float by Cast and Mul), or
        ORT's quantized ops (QDQ pairs, MatMulInteger, QLinearConv, MatMulNBits, ...)."""
        return self.integer_weights > 0 or self.has_ops(*QUANTIZED_OPS)

    @property
    def stored_int8_only(self) -> bool:
        """Weights stored in 8 bits and computed in float: no ORT quantized op (QDQ, MatMulInteger, QLinear*)
        runs them, so the model runs float kernels and INT8 kernels can still gain."""
        return self.integer_weights > 0 and not self.has_ops(*QUANTIZED_OPS)

    def has_ops(self, *op_types: str) -> bool:
        return any(self.op_counts.get(op, 0) for op in op_types)

    def count(self, *op_types: str) -> int:
        return sum(self.op_counts.get(op, 0) for op in op_types)

    def top_ops(self, n: int = 8) -> str:
        skip = {"Constant", "Shape", "Unsqueeze", "Gather", "Reshape", "Concat", "Cast"}
        ops = [(op, c) for op, c in self.op_counts.most_common() if op not in skip][:n]
        return ", ".join(f"{op} {c}" for op, c in ops)


def _tensor(value: object) -> TensorFact:
    from onnx import helper

    tensor = value.type.tensor_type  # type: ignore[attr-defined]
    dtype = (
        helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "float32"
    )
    shape = tuple(
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
    )
    return TensorFact(value.name, dtype, shape)  # type: ignore[attr-defined]


# Ops a weight passes through on its way to the op that uses it (a transposed, cast or dequantized weight).
_WEIGHT_PATH = {
    "Cast",
    "Transpose",
    "DequantizeLinear",
    "Identity",
    "Reshape",
    "Unsqueeze",
    "Squeeze",
}


@dataclass
class _Tally:
    """What a walk over a graph and its subgraphs counts. Each weight (an initializer or a Constant tensor) is
    counted once, at its size, and belongs to the op type that first consumes it."""

    ops: Counter = field(default_factory=Counter)
    nodes: int = 0
    sizes: dict[str, int] = field(
        default_factory=dict
    )  # weight -> elements (those defined in the walked graphs)
    consumers: dict[str, str] = field(
        default_factory=dict
    )  # weight -> the op type that first consumes it
    float16: int = 0  # float16 weights and Cast(to=float16) nodes

    @property
    def weights(self) -> int:
        return sum(self.sizes.values())

    def weights_by_op(self, sizes: dict[str, int]) -> Counter:
        held: Counter = Counter()
        for weight, op in self.consumers.items():
            held[op] += sizes.get(weight, 0)
        return held


def _elements(dims: object) -> int:
    count = 1
    for d in dims:  # type: ignore[attr-defined]
        count *= int(d)
    return count


def _subgraphs(node: object) -> list[object]:
    found = []
    for attr in node.attribute:  # type: ignore[attr-defined]
        if attr.HasField("g"):
            found.append(attr.g)
        found.extend(attr.graphs)
    return found


_FLOAT16 = 10  # onnx.TensorProto.FLOAT16


def _makes_float16(node: object) -> bool:
    """A Cast to float16, or a Constant holding a float16 tensor."""
    return any(
        (a.name == "to" and a.i == _FLOAT16) or (a.HasField("t") and a.t.data_type == _FLOAT16)
        for a in node.attribute  # type: ignore[attr-defined]
    )


def _walk(graph: object, outer: dict[str, str], tally: _Tally) -> None:
    """Count the graph's nodes and op types, its weights and which op type consumes each; subgraphs see their
    enclosing graphs' weights, as ONNX scoping does. `outer` maps a tensor to the weight it carries."""
    carries = dict(outer)
    for tensor in graph.initializer:  # type: ignore[attr-defined]
        carries[tensor.name] = tensor.name
        tally.sizes[tensor.name] = _elements(tensor.dims)
        tally.float16 += tensor.data_type == _FLOAT16
    for node in graph.node:  # type: ignore[attr-defined]
        tally.nodes += 1
        tally.ops[node.op_type] += 1
        tally.float16 += _makes_float16(node)
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            key = f"{id(graph)}:{node.output[0]}"  # a subgraph may reuse a name: its own weight all the same
            carries[node.output[0]] = key
            tally.sizes[key] = _elements(node.attribute[0].t.dims)
        elif node.op_type in _WEIGHT_PATH and node.input and node.input[0] in carries:
            carries[node.output[0]] = carries[node.input[0]]
        else:
            for name in node.input:
                if name in carries:
                    tally.consumers.setdefault(carries[name], node.op_type)
        for sub in _subgraphs(node):
            _walk(sub, carries, tally)


_COMPARISONS = {
    "Equal": "==",
    "Greater": ">",
    "Less": "<",
    "GreaterOrEqual": ">=",
    "LessOrEqual": "<=",
}
_NEGATED = {"==": "!=", ">": "<=", "<": ">=", ">=": "<", "<=": ">"}
_MIRRORED = {"==": "==", ">": "<", "<": ">", ">=": "<=", "<=": ">="}
_PASS = {"Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape"}


def _scalar(
    name: str, producers: dict[str, NodeProto], initializers: dict[str, TensorProto]
) -> object | None:
    """The value of a one-element constant (a Constant node's or an initializer's), else None."""
    from onnx import numpy_helper

    node = producers.get(name)
    constant = node is not None and node.op_type == "Constant" and node.attribute
    tensor = node.attribute[0].t if node is not None and constant else initializers.get(name)
    if tensor is None or _elements(tensor.dims) != 1 or tensor.data_location == 1:
        return None
    return numpy_helper.to_array(tensor).reshape(-1)[0].item()


def _through(name: str, producers: dict[str, NodeProto]) -> str:
    """`name` traced back through casts and reshapes to the tensor they pass on."""
    while (node := producers.get(name)) is not None and node.op_type in _PASS and node.input:
        name = node.input[0]
    return name


def _condition(
    name: str,
    producers: dict[str, NodeProto],
    initializers: dict[str, TensorProto],
    inputs: set[str],
    negate: bool = False,
) -> str | None:
    """A comparison of one graph input with a constant, as text ("sr == 16000"), else None."""
    node = producers.get(_through(name, producers))
    if node is not None and node.op_type == "Not":
        return _condition(node.input[0], producers, initializers, inputs, not negate)
    if node is None or node.op_type not in _COMPARISONS:
        return None
    op = _COMPARISONS[node.op_type]
    left, right = (_through(i, producers) for i in node.input)
    if right in inputs and left not in inputs:
        left, right, op = right, left, _MIRRORED[op]
    value = _scalar(right, producers, initializers)
    if left not in inputs or value is None:
        return None
    return f"{left} {_NEGATED[op] if negate else op} {value}"


def _deciding_inputs(
    name: str, producers: dict[str, NodeProto], inputs: set[str]
) -> tuple[str, ...]:
    """The graph inputs a tensor is computed from, through the top-level nodes."""
    found, seen, stack = [], set(), [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in inputs:
            found.append(current)
        node = producers.get(current)
        stack.extend(node.input if node is not None else ())
    return tuple(sorted(found))


def _branches(graph: GraphProto, inputs: set[str], sizes: dict[str, int]) -> tuple[BranchFact, ...]:
    producers = {out: node for node in graph.node for out in node.output}
    initializers = {t.name: t for t in graph.initializer}
    outer = {name: name for name in initializers}
    facts = []
    for node in graph.node:
        if node.op_type != "If":
            continue
        inside = _Tally()
        for sub in _subgraphs(node):
            _walk(sub, outer, inside)
        used = set(inside.sizes) | set(
            inside.consumers
        )  # weights defined in the branches, or used there
        deciding = _deciding_inputs(node.input[0], producers, inputs)
        condition = _condition(node.input[0], producers, initializers, inputs) or (
            f"a value computed from {', '.join(deciding)}"
            if deciding
            else "a value computed from constants"
        )
        facts.append(
            BranchFact(
                node.name or node.output[0],
                deciding,
                condition,
                inside.nodes,
                sum(sizes.get(w, inside.sizes.get(w, 0)) for w in used),
            )
        )
    return tuple(facts)


def read_model_facts(path: Path) -> ModelFacts:
    """Facts about the model at `path` (one .onnx file; its external data is listed, not read)."""
    path = Path(path)
    model = load_graph(path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = tuple(_tensor(v) for v in model.graph.input if v.name not in initializers)
    outputs = tuple(_tensor(v) for v in model.graph.output)
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    producer = f"{model.producer_name} {model.producer_version}".strip()
    integer_weights = sum(
        1
        for t in model.graph.initializer
        if t.data_type in _INTEGER_WEIGHT_TYPES and _values(t) >= MIN_WEIGHT
    )
    tally = _Tally()
    _walk(model.graph, {}, tally)
    return ModelFacts(
        path=path,
        inputs=inputs,
        outputs=outputs,
        op_counts=tally.ops,
        opset=opset,
        size_bytes=total_size(path),
        external_data=tuple(external_data_files(path)),
        producer=producer,
        node_total=tally.nodes,
        weight_total=tally.weights,
        weights_by_op=tally.weights_by_op(tally.sizes),
        branches=_branches(model.graph, {f.name for f in inputs}, tally.sizes),
        integer_weights=integer_weights,
        float16_parts=tally.float16 + sum(f.dtype == "float16" for f in inputs),
        hard_chains=hard_chains(model.graph),
        conv_scalings=conv_scalings(model.graph),
    )


def _values(tensor: object) -> int:
    return math.prod(tensor.dims)  # type: ignore[attr-defined]
