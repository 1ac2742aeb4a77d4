"""Float16 to float32 inside an ONNX graph: weights (initializers, Constant and ConstantOfShape tensors), the
types ops are told to produce (Cast, RandomNormal, EyeLike ...), declared value types, and If/Loop/Scan bodies.
On CPUs ORT has few float16 kernels, so a float16 model (or a float16 island a converter left inside a float
model) runs through inserted Casts or slow paths, and ORT's quantizer writes QuantizeLinear on float16 tensors
that ORT then cannot load. No well-kept library converts this way round (onnxruntime.transformers.float16 and
onnxconverter-common convert float32 to float16 only), so it is written here on onnx's protobuf. The
convert_float32 stage runs it and checks the result; not part of the plugin API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FLOAT = 1  # onnx.TensorProto.FLOAT
FLOAT16 = 10  # onnx.TensorProto.FLOAT16
# attributes naming the element type an op produces
TYPE_ATTRIBUTES = {"Cast": "to", "RandomNormal": "dtype", "RandomUniform": "dtype"}
TYPE_ATTRIBUTES |= {"RandomNormalLike": "dtype", "RandomUniformLike": "dtype", "EyeLike": "dtype"}
TYPE_ATTRIBUTES |= {"Multinomial": "dtype", "Bernoulli": "dtype"}
SUFFIX = "_float32"


@dataclass
class Float32Counts:
    """What was converted, so the stage can say it (and refuse a model with no float16 in it)."""

    weights: int = 0  # initializers and Constant/ConstantOfShape tensors
    casts: int = 0  # Cast(to=FLOAT16) and other ops told to produce float16
    values: int = 0  # declared value types (graph inputs/outputs, value_info, in subgraphs too)
    boundary: list[str] = field(
        default_factory=list
    )  # float16 inputs/outputs kept, with a Cast inside

    @property
    def total(self) -> int:
        return self.weights + self.casts + self.values


def float16_count(model: Any) -> int:
    """How many float16 tensors, casts and declared values the model holds (0: nothing to convert)."""
    import copy

    counts = Float32Counts()
    _convert_graph(copy.deepcopy(model.graph), counts)
    return counts.total


def to_float32(model: Any, keep_io_types: bool = True) -> Float32Counts:
    """Convert `model` in place. With keep_io_types, the top-level float16 inputs and outputs keep their type
    (a Cast to float32 after each input, to float16 before each output), so data made for the original feeds it."""
    counts = Float32Counts()
    graph = model.graph
    kept_inputs = [v for v in graph.input if _is_half(v)] if keep_io_types else []
    kept_outputs = [v for v in graph.output if _is_half(v)] if keep_io_types else []
    _convert_graph(graph, counts)
    for value in kept_inputs + kept_outputs:
        value.type.tensor_type.elem_type = FLOAT16
        counts.values -= 1
    _cast_inputs(graph, [v.name for v in kept_inputs])
    _cast_outputs(graph, [v.name for v in kept_outputs])
    counts.boundary = [v.name for v in kept_inputs + kept_outputs]
    return counts


def _is_half(value: Any) -> bool:
    return value.type.HasField("tensor_type") and value.type.tensor_type.elem_type == FLOAT16


def _convert_graph(graph: Any, counts: Float32Counts) -> None:
    for tensor in graph.initializer:
        counts.weights += _convert_tensor(tensor)
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if _is_half(value):
            value.type.tensor_type.elem_type = FLOAT
            counts.values += 1
    for node in graph.node:
        _convert_node(node, counts)


def _convert_node(node: Any, counts: Float32Counts) -> None:
    from onnx import AttributeProto

    wanted = TYPE_ATTRIBUTES.get(node.op_type)
    for attribute in node.attribute:
        if attribute.type == AttributeProto.TENSOR:
            counts.weights += _convert_tensor(attribute.t)
        elif attribute.type == AttributeProto.GRAPH:
            _convert_graph(attribute.g, counts)
        elif attribute.type == AttributeProto.GRAPHS:
            for graph in attribute.graphs:
                _convert_graph(graph, counts)
        elif attribute.name == wanted and attribute.i == FLOAT16:
            attribute.i = FLOAT
            counts.casts += 1


def _convert_tensor(tensor: Any) -> int:
    """1 where `tensor` was float16 (now float32, same values), else 0."""
    from onnx import numpy_helper

    if tensor.data_type != FLOAT16:
        return 0
    values = numpy_helper.to_array(tensor).astype("float32")
    tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))
    return 1


def _cast_inputs(graph: Any, names: list[str]) -> None:
    """Each kept float16 input cast to float32 once, its readers (subgraphs' too) reading the cast."""
    from onnx import helper

    for name in names:
        _rename_uses(graph, name, name + SUFFIX)
        graph.node.insert(0, helper.make_node("Cast", [name], [name + SUFFIX], to=FLOAT))


def _cast_outputs(graph: Any, names: list[str]) -> None:
    """Each kept float16 output computed in float32 under a new name, then cast to float16 under its own."""
    from onnx import helper

    for name in names:
        for node in graph.node:
            node.output[:] = [name + SUFFIX if o == name else o for o in node.output]
        _rename_uses(graph, name, name + SUFFIX)
        graph.node.append(helper.make_node("Cast", [name + SUFFIX], [name], to=FLOAT16))


def _rename_uses(graph: Any, old: str, new: str) -> None:
    from onnx import AttributeProto

    for node in graph.node:
        node.input[:] = [new if i == old else i for i in node.input]
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                _rename_uses(attribute.g, old, new)
            for body in attribute.graphs:
                _rename_uses(body, old, new)
