"""What quantization did to a model, read from the graph: which ops ORT will run as integer kernels, how many
activations are quantized, and which of the float model's nodes changed (the names `nodes_to_exclude` takes).
Only the quantize stages use this."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Collection, TypedDict

# Ops ORT runs as integer kernels when all their float inputs are dequantized (QDQ), whatever follows them.
INTEGER_COMPUTE_OPS = {
    "MatMul",
    "Gemm",
    "Conv",
    "ConvTranspose",
    "Gather",
    "GatherElements",
    "Attention",
    "EmbedLayerNormalization",
}


def float_tensors(model: Any) -> set[str]:
    """Names of the float32/float16 tensors of a model (graph inputs, initializers, inferred activations)."""
    import onnx

    try:
        typed = onnx.shape_inference.infer_shapes(model).graph
    except (
        onnx.shape_inference.InferenceError,
        ValueError,
    ):  # best effort: declared types are still known
        typed = model.graph
    kinds = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
    found = {
        v.name
        for v in [*typed.value_info, *typed.input, *typed.output]
        if v.type.tensor_type.elem_type in kinds
    }
    return found | {t.name for t in model.graph.initializer if t.data_type in kinds}


class QuantizedOps(TypedDict):
    """What quantization did to a graph (quantized_ops)."""

    by_op_type: dict[str, int]  # op type -> how many of its nodes ORT runs quantized
    activations: int  # activations (not weights) quantized


def quantized_ops(path: Path) -> QuantizedOps:
    """What quantization did. QDQ: nodes all of whose float inputs are dequantized (ORT runs them as integer
    kernels). QOperator and dynamic: the QLinear* and *Integer ops. Plus how many activations (tensors that
    are not weights) pass through QuantizeLinear or DynamicQuantizeLinear."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    floats = float_tensors(model)
    initializers = {t.name for t in model.graph.initializer}
    dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    quantized_inputs = {
        i for n in model.graph.node if n.op_type == "QuantizeLinear" for i in n.input[:1]
    }
    by_op_type: Counter[str] = Counter()
    for node in model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"):
            continue
        if (
            node.op_type.startswith("QLinear")
            or node.op_type.endswith("Integer")
            or node.domain == "com.microsoft"
            and node.op_type
            in (
                "QAttention",
                "QEmbedLayerNormalization",
                "DynamicQuantizeMatMul",
                "DynamicQuantizeLSTM",
                "QGemm",
            )
        ):
            by_op_type[node.op_type] += 1
            continue
        float_inputs = [i for i in node.input if i and (i in floats or i in dequantized)]
        if not float_inputs or not all(i in dequantized for i in float_inputs):
            continue
        # ORT runs these as integer kernels with float outputs; any other op only when its output is
        # quantized again (otherwise it computes in float on dequantized values).
        outputs_quantized = all(o in quantized_inputs for o in node.output if o in floats)
        if node.op_type in INTEGER_COMPUTE_OPS or outputs_quantized:
            by_op_type[node.op_type] += 1
    activations = sum(
        1
        for n in model.graph.node
        if n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear")
        and n.input[0] not in initializers
    )
    return {"by_op_type": by_op_type, "activations": activations}


def quantized_node_names(before: Path, after: Path, op_types: Collection[str]) -> list[str]:
    """Names of the nodes of `before` (the float model handed to ORT's quantizer) of `op_types` (the ones
    the quantizer handles) that `after` computes in integer: replaced by a quantized op (dynamic, QOperator),
    or fed dequantized inputs (QDQ). These are the names `nodes_to_exclude` takes, in graph order."""
    import onnx

    float_model = onnx.load(str(before), load_external_data=False)
    quantized = onnx.load(str(after), load_external_data=False)
    by_name = {n.name: n for n in quantized.graph.node if n.name}
    dequantized = {n.output[0] for n in quantized.graph.node if n.op_type == "DequantizeLinear"}
    found = []
    for node in float_model.graph.node:
        if not node.name or node.op_type not in op_types:
            continue
        now = by_name.get(node.name)
        if now is None or now.op_type != node.op_type or any(i in dequantized for i in now.input):
            found.append(node.name)
    return found


def nothing_quantized(model: Path, asked: list[str]) -> str:
    """Why a quantizer may have found nothing to quantize: the op types asked for and those the model has
    (subgraphs counted), and what a quantizable node needs."""
    import onnx

    from ortflow.api.onnx import op_counts

    counts = op_counts(model)
    in_main = {n.op_type for n in onnx.load(str(model), load_external_data=False).graph.node}
    top = ", ".join(
        f"{op} {n}" for op, n in counts.most_common(12) if op not in ("Constant", "Identity")
    )
    wanted = (
        ", ".join(asked)
        if len(asked) <= 8
        else f"{len(asked)} op types ({', '.join(asked[:8])}, ...)"
    )
    present = sorted(set(asked) & set(counts))
    nested = [op for op in present if op not in in_main]
    if nested:
        because = (
            f"its {', '.join(nested)} are inside If/Loop subgraphs, which ORT's quantizers do not enter "
            "(re-export without control flow, e.g. for one fixed sample rate)"
        )
    elif present:
        because = (
            f"the model has {', '.join(present)}, yet ORT quantized none: a weight computed by nodes instead of "
            "stored as an initializer needs folding first (graph_optimization, level basic), and ops without "
            "weights (Relu, Add, ...) are quantized only between quantized neighbours"
        )
    else:
        because = "the model has none of them"
    return f"asked for {wanted}; {because}. Its op types: {top} — set op_types_to_quantize to ones it has"


def check_excluded_nodes(model: Any, excluded: list[str]) -> None:
    """A `nodes_to_exclude` name that matches no node would silently keep nothing float: fail, naming the
    nearest name the model has (`model`: a loaded ModelProto)."""
    from ortflow.api import StageError, suggest

    names = {n.name for n in model.graph.node if n.name}
    unknown = sorted(set(excluded) - names)
    if unknown:
        hint = (
            suggest(unknown[0], names)
            or "node names are in the model (and in a quantize stage's metrics)"
        )
        raise StageError(
            f"nodes_to_exclude: the model has no node named {', '.join(unknown)} — {hint}"
        )
