"""What an ONNX file says about itself, read without running it: its inputs and outputs (dtype, fixed and
symbolic dims), op types, opset, size and external data. `engine init` reads these facts to write a recipe;
what they likely mean (token ids, an image, a recurrent state, a detection head) is decided there."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ortflow.engine.ort.onnx_model import external_data_files, load_graph, total_size

Dim = int | str | None  # a fixed size, a symbolic name, or unknown
QUANTIZED_OPS = ("DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "QLinearConv",
                 "QLinearMatMul", "MatMulNBits", "QAttention", "DynamicQuantizeMatMul", "QGemm")
MIN_WEIGHT = 64  # values: an int8 table of a few entries (a lookup, a shape) is not a quantized weight
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
        return [axis for axis, dim in enumerate(self.shape) if not (isinstance(dim, int) and dim > 0)]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None or d == 0 else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype} [{dims}]"


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
    integer_weights: int = 0  # initializers of 8 bits or fewer holding at least MIN_WEIGHT values: weights quantized already

    @property
    def already_quantized(self) -> bool:
        """Quantized before ortflow saw it: integer weights (e.g. int8 ones turned to float by Cast and Mul), or
        ORT's quantized ops (QDQ pairs, MatMulInteger, QLinearConv, MatMulNBits, ...)."""
        return self.integer_weights > 0 or self.has_ops(*QUANTIZED_OPS)

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
    dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "float32"
    shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
    return TensorFact(value.name, dtype, shape)  # type: ignore[attr-defined]


def _all_op_types(graph: object) -> Counter:
    """Op types of the graph and of the subgraphs inside If/Loop/Scan nodes."""
    counts: Counter = Counter()
    stack = [graph]
    while stack:
        current = stack.pop()
        for node in current.node:  # type: ignore[attr-defined]
            counts[node.op_type] += 1
            for attr in node.attribute:
                if attr.HasField("g"):
                    stack.append(attr.g)
                stack.extend(attr.graphs)
    return counts


def read_model_facts(path: Path) -> ModelFacts:
    """Facts about the model at `path` (one .onnx file; its external data is listed, not read)."""
    path = Path(path)
    model = load_graph(path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = tuple(_tensor(v) for v in model.graph.input if v.name not in initializers)
    outputs = tuple(_tensor(v) for v in model.graph.output)
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    producer = f"{model.producer_name} {model.producer_version}".strip()
    integer_weights = sum(1 for t in model.graph.initializer if t.data_type in _INTEGER_WEIGHT_TYPES and _values(t) >= MIN_WEIGHT)
    return ModelFacts(path=path, inputs=inputs, outputs=outputs, op_counts=_all_op_types(model.graph), opset=opset,
                      size_bytes=total_size(path), external_data=tuple(external_data_files(path)), producer=producer,
                      integer_weights=integer_weights)


def _values(tensor: object) -> int:
    count = 1
    for dim in tensor.dims:  # type: ignore[attr-defined]
        count *= dim
    return count
