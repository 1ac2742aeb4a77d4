"""Specializing an ONNX graph for fixed shapes and input values: what it is specialized for (checked against the
model's inputs), writing that into the graph, folding it with onnxscript's optimizer, and counting what the folding
removed (nodes, Ifs, shape arithmetic). The specialize stage runs these and checks the result; not part of the
plugin API."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypedDict

from ortflow.api import FROZEN_INPUTS, Feed, Json, ModelInput, StageError
from ortflow.stages.graphs.activations import fuse_hard_activations
from ortflow.stages.graphs.bidirectional import join_directions
from ortflow.stages.graphs.conv_affine import fold_conv_affine
from ortflow.stages.graphs.zero_states import drop_zero_states

if TYPE_CHECKING:
    import numpy as np

# onnxscript's defaults keep large constants unfolded to keep files small; a specialized model trades that for a
# graph without the arithmetic (a weight sliced into LSTM gates is folded once here rather than on every call).
FOLD_INPUT_LIMIT = 1 << 22
FOLD_OUTPUT_LIMIT = 1 << 22
FOLD_ROUNDS = 4
SHAPE_SOURCES = ("Shape", "Size")


class SpecializationRecord(TypedDict):
    """A Specialization as the stage's metrics record it."""

    shapes: dict[str, list[int]]
    dims: dict[str, int]
    frozen: dict[str, Json]  # each frozen value as a (nested) list
    from_data: list[str]


@dataclass
class Specialization:
    """What the model is specialized for: each fixed input's shape, each frozen input's value, and which of
    these were read from the data (the dataset's digest is in the key, so the values are part of its identity)."""

    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)
    frozen: dict[str, np.ndarray] = field(default_factory=dict)
    from_data: set[str] = field(default_factory=set)

    def describe(self) -> str:
        fixed = [f"{n} {list(s)}" for n, s in self.shapes.items()] + [
            f"{n}={v}" for n, v in self.dims.items()
        ]
        frozen = [
            f"{n} = {shown(v)}" + (" (data)" if n in self.from_data else "")
            for n, v in self.frozen.items()
        ]
        parts = (["fixed " + ", ".join(fixed)] if fixed else []) + (
            ["froze " + ", ".join(frozen)] if frozen else []
        )
        return "; ".join(parts) or "nothing fixed or frozen"

    def to_json(self) -> SpecializationRecord:
        return {
            "shapes": {n: list(s) for n, s in self.shapes.items()},
            "dims": dict(self.dims),
            "frozen": {n: v.tolist() for n, v in self.frozen.items()},
            "from_data": sorted(self.from_data),
        }


@dataclass(frozen=True)
class GraphCounts:
    """Nodes before or after: all of them (subgraphs included), `If`s, and shape arithmetic (nodes computing
    only from Shape/Size outputs and constants)."""

    nodes: int
    ifs: int
    shape_nodes: int

    @classmethod
    def of(cls, model: Any) -> GraphCounts:
        return cls(
            _count(model.graph, lambda n: True),
            _count(model.graph, lambda n: n.op_type == "If"),
            len(shape_nodes(model.graph)),
        )


@dataclass(frozen=True)
class SpecializeSettings:
    """The specialize stage's parameters (its params_schema, read typed: ortflow.api.settings_problems checks
    them). Here, beside plan(), which reads them; the stage declares them as its settings."""

    dims: Mapping[str, int] = field(default_factory=dict)
    shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    freeze: Mapping[str, float | list[Any]] = field(
        default_factory=dict
    )  # a number or a nested array
    freeze_from_data: tuple[str, ...] = ()
    shapes_from_data: bool = False
    samples: int = 16
    atol: float = 1e-4
    rtol: float = 1e-3


def plan(read: SpecializeSettings, inputs: list[ModelInput], feeds: list[Feed]) -> Specialization:
    """The shapes and values asked for in the stage's settings, checked against the model's inputs (each
    message names the fix)."""
    import numpy as np

    by_name = {i.name: i for i in inputs}
    named = ", ".join(i.name for i in inputs)
    for name in [*read.shapes, *read.freeze, *read.freeze_from_data]:
        if name not in by_name:
            raise StageError(
                f"specialize: the model has no input '{name}' — its inputs are {named}"
            )
    known = {d for i in inputs for d in i.shape if isinstance(d, str)}
    for dim in read.dims:
        if dim not in known:
            raise StageError(
                f"specialize: no input has a dim named '{dim}' (named dims: {', '.join(sorted(known)) or 'none'}) — use `shapes`"
            )
    spec = Specialization(dims=dict(read.dims))
    for name, value in read.freeze.items():
        spec.frozen[name] = _value(by_name[name], np.asarray(value))
    for name in read.freeze_from_data:
        spec.frozen[name] = _value(by_name[name], _one_value(name, feeds))
        spec.from_data.add(name)
    for name, shape in read.shapes.items():
        spec.shapes[name] = _shape(by_name[name], tuple(shape))
    if read.shapes_from_data:
        for name in by_name.keys() - spec.shapes.keys() - spec.frozen.keys():
            spec.shapes[name] = _shape(by_name[name], tuple(feeds[0][name].shape))
    return spec


def _value(spec: ModelInput, value: np.ndarray) -> np.ndarray:
    if value.ndim != len(spec.shape):
        raise StageError(
            f"specialize: input '{spec.name}' is {spec.describe()}, the frozen value has {value.ndim} dims — give it as "
            f"{'a number' if not spec.shape else 'a nested list of that rank'}"
        )
    return value.astype(spec.dtype)


def _one_value(name: str, feeds: list[Feed]) -> np.ndarray:
    import numpy as np

    values = {np.asarray(f[name]).tobytes(): np.asarray(f[name]) for f in feeds}
    if len(values) != 1:
        some = ", ".join(shown(v) for v in list(values.values())[:3])
        raise StageError(
            f"specialize: the data gives input '{name}' {len(values)} values ({some}) — specialize for one "
            f"(freeze: {{{name}: ...}}) and use data of that value"
        )
    return next(iter(values.values()))


def _shape(spec: ModelInput, shape: tuple[int, ...]) -> tuple[int, ...]:
    fixed = [isinstance(d, int) and d > 0 for d in spec.shape]
    if len(shape) != len(spec.shape) or any(
        f and d != s for f, d, s in zip(fixed, spec.shape, shape)
    ):
        raise StageError(
            f"specialize: input '{spec.name}' is {spec.describe()}, which {list(shape)} does not fit — give a shape of that rank"
        )
    return shape


def apply(model: Any, spec: Specialization, inputs: list[ModelInput]) -> None:
    """Write the specialization into the graph: frozen inputs become initializers, fixed dims dim_values, and
    stale value_info (shapes recorded for the dynamic model) goes, so the folder infers them again."""
    from onnx import numpy_helper

    graph = model.graph
    for value in list(graph.input):
        if value.name in spec.frozen:
            graph.input.remove(value)
            graph.initializer.append(numpy_helper.from_array(spec.frozen[value.name], value.name))
            continue
        shape = spec.shapes.get(value.name)
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            size = shape[axis] if shape is not None else spec.dims.get(dim.dim_param)
            if size is not None:
                dim.dim_value = size
    for value in graph.output:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in spec.dims:
                dim.dim_value = spec.dims[dim.dim_param]
    _clear_value_info(graph)
    if (
        spec.frozen
    ):  # what data made for the original still carries, and Dataset.feeds drops (checking it)
        frozen = {n: v.tolist() for n, v in spec.frozen.items()}
        model.metadata_props.add(key=FROZEN_INPUTS, value=json.dumps(frozen, sort_keys=True))


def fold(model: Any) -> Any:
    """onnxscript's optimizer: constant folding with shape inference, Ifs on constant conditions inlined, unused
    nodes and initializers removed. ConstantOfShape, which it keeps by default to save bytes, is folded too. Then
    recurrent ops' all-zero initial states are left out (ONNX's default), with the nodes that built them; a
    bidirectional op's directions sliced apart and joined again become one reshape (stages/graphs/bidirectional.py);
    HardSwish/HardSigmoid written as Clip chains become those ops (stages/graphs/activations.py); and scalar scales
    and shifts around convolutions go into their weights (stages/graphs/conv_affine.py)."""
    import onnx_ir as ir
    import onnxscript.optimizer as optimizer

    graph = ir.serde.deserialize_model(model)
    optimizer.optimize_ir(
        graph,
        num_iterations=FOLD_ROUNDS,
        input_size_limit=FOLD_INPUT_LIMIT,
        output_size_limit=FOLD_OUTPUT_LIMIT,
        should_fold=lambda node: True if node.op_type == "ConstantOfShape" else None,
    )
    if drop_zero_states(graph) + join_directions(graph):  # what they replaced is unused now
        optimizer.remove_unused_nodes(graph)
    graph = fold_conv_affine(fuse_hard_activations(graph))
    optimizer.remove_unused_nodes(graph)
    return ir.serde.serialize_model(graph)


def _clear_value_info(graph: Any) -> None:
    del graph.value_info[:]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _clear_value_info(attribute.g)


def _subgraphs(node: Any) -> list[Any]:
    return [a.g for a in node.attribute if a.HasField("g")] + [
        g for a in node.attribute for g in a.graphs
    ]


def _count(graph: Any, wanted: Any) -> int:
    return sum(int(wanted(n)) + sum(_count(g, wanted) for g in _subgraphs(n)) for n in graph.node)


def shape_nodes(graph: Any) -> list[str]:
    """Nodes computing shapes (their names, or first outputs): Shape/Size, and nodes whose inputs are all shape
    values or constants (with at least one shape value), e.g. Gather on a shape, Concat of dims, Equal/Where on
    them; in subgraphs too."""
    constant = {t.name for t in graph.initializer} | {
        o for n in graph.node if n.op_type == "Constant" for o in n.output
    }
    shaped: set[str] = set()
    found = []
    for node in graph.node:
        present = [i for i in node.input if i]
        if node.op_type in SHAPE_SOURCES or (
            any(i in shaped for i in present) and all(i in shaped or i in constant for i in present)
        ):
            shaped.update(node.output)
            found.append(node.name or node.output[0])
        found += [name for g in _subgraphs(node) for name in shape_nodes(g)]
    return found


def shown(value: np.ndarray) -> str:
    return str(value.item()) if value.size == 1 else f"{list(value.shape)} array"
