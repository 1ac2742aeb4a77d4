"""When ORT's quantizer fails, or writes a model ORT cannot load, name the node and try again with it kept float.

ORT's load errors name the node ("Node (/lstm_bwd/cell/Gemm_Add) Op (Add) [ShapeInferenceError] Incompatible
dimensions"), a name the quantizer made from the source node's ("/lstm_bwd/cell/Gemm" + "_Add"); a quantizer
exception names none, but the frame that raised it holds the node being quantized. Either way the source node
is kept float and the quantizer runs again, at most MAX_RETRIES times: one bad node (a detection head, a
recurrent cell, a reshaping Transpose) then costs that node's speed-up, not the whole model's. Where the error
is about a shape or an attribute, what the failing node feeds inherits it, so the nodes reading its outputs
are kept float with it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

MAX_RETRIES = 8  # quantizer runs after the first; each keeps at least one more node float
LOAD_NODE = re.compile(r"Node \(([^)]+)\)")
INHERITED = ("ShapeInferenceError", "Invalid attribute", "Incompatible dimensions", "shape")


@dataclass(frozen=True)
class KeptFloat:
    """A node the retry kept float, and ORT's words that made it."""

    node: str
    why: str
    retry: int  # the quantizer run, from 1, that kept it float

    def as_dict(self) -> dict[str, str | int]:
        return {"node": self.node, "why": self.why, "retry": self.retry}


def source_node(name: str, names: set[str]) -> str | None:
    """The source graph's node a written node stands for: itself, or the longest source name it extends
    ("X_Add", "X_MatMul_quant" from X), as ORT's quantizers name the nodes they make."""
    if name in names:
        return name
    found = [n for n in names if n and name.startswith(n + "_")]
    return max(found, key=len) if found else None


def node_in_traceback(exc: BaseException) -> str | None:
    """The name of the node ORT's quantizer was working on when it raised: the innermost frame holding an
    onnx NodeProto as `node` (or `self.node`, its operator quantizers)."""
    from onnx import NodeProto

    found, trace = None, exc.__traceback__
    while trace is not None:
        local = trace.tb_frame.f_locals
        node = local.get("node")
        node = node if isinstance(node, NodeProto) else getattr(local.get("self"), "node", None)
        if isinstance(node, NodeProto) and node.name:
            found = node.name
        trace = trace.tb_next
    return found


def culprits(exc: BaseException, graph: Any) -> list[str]:
    """The source nodes to keep float for `exc`: the one it names (or was quantizing), and where the error is
    about a shape or an attribute, the nodes that read its outputs. Empty when no node can be told."""
    names = {n.name for n in graph.node if n.name}
    said = LOAD_NODE.search(str(exc))  # ORT's load error, as onnx_model.check passes it on
    named = said.group(1) if said else node_in_traceback(exc)
    node = source_node(named, names) if named else None
    if node is None:
        return []
    found = [node]
    if any(word in str(exc) for word in INHERITED):
        outputs = {o for n in graph.node if n.name == node for o in n.output}
        found += [n.name for n in graph.node if n.name and outputs & set(n.input)]
    return list(dict.fromkeys(found))


def one_line(exc: BaseException, limit: int = 160) -> str:
    """ORT's words without the file paths it adds: from "Node (" on for a load error (the same on every
    machine, for metrics.json), else the exception's type and first line."""
    text = " ".join(str(exc).split())
    said = LOAD_NODE.search(text)
    text = text[said.start() :] if said else f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quantize_with_retries(
    attempt: Callable[[list[str]], None], graph: Any, excluded: list[str]
) -> list[KeptFloat]:
    """Run `attempt(nodes_to_exclude)` (quantize, write, check that ORT loads it) until it succeeds, keeping float after
    each failure the nodes it names; returns those nodes. Re-raises the failure when no node can be told or
    the named one is float already, and after MAX_RETRIES retries (as RetriesSpent, saying what was tried)."""
    kept: list[KeptFloat] = []
    for retry in range(MAX_RETRIES + 1):
        floated = list(dict.fromkeys([*excluded, *(k.node for k in kept)]))
        try:
            attempt(floated)
        except Exception as exc:  # ORT's quantizer or its loader: its failure is read, then retried
            fresh = [n for n in culprits(exc, graph) if n not in floated]
            if (not fresh or retry == MAX_RETRIES) and kept:
                raise RetriesSpent(exc, kept) from exc
            if not fresh or retry == MAX_RETRIES:
                raise
            kept += [KeptFloat(n, one_line(exc), retry + 1) for n in fresh]
        else:
            return kept
    raise AssertionError("unreachable: the loop returns or raises")


class RetriesSpent(Exception):
    """The quantizer's last failure, after `kept` were kept float one retry at a time."""

    def __init__(self, exc: BaseException, kept: list[KeptFloat]):
        super().__init__(str(exc))
        self.original, self.kept = exc, kept


def summary(kept: list[KeptFloat]) -> str:
    """The stage summary's words for the retries: what stayed float and why (ORT's first words)."""
    if not kept:
        return ""
    first = kept[0].why[:100]
    retries = max(k.retry for k in kept)
    names = ", ".join(k.node for k in kept[:4]) + (
        f" and {len(kept) - 4} more" if len(kept) > 4 else ""
    )
    return (
        f"kept float after ORT failed on them ({retries} of at most {MAX_RETRIES} retries): {names} "
        f"(first: {first})"
    )


def float_gemms(model: Path, names: list[str], out: Path) -> list[str]:
    """`model` with the Gemms among `names` that ORT's dynamic quantizer would rewrite (alpha = beta = 1, no
    transA) rewritten as it does, MatMul then Add, so that they stay float: ORT replaces every such Gemm
    before it reads nodes_to_exclude (onnx_quantizer.py, replace_gemm_with_matmul), so a Gemm's name there
    keeps nothing float; and it transposes a transB weight in place, once per Gemm, "assuming B is not used
    by any other node" (an unrolled LSTM's cells share it: an even count leaves it untransposed and the model
    cannot load). Here each kept Gemm reads its own transposed copy. Written to `out` where any was
    rewritten; returns the names to give ORT (the MatMuls and Adds, as ORT would have named them).
    (Used for the nodes float_retry keeps float only: a Gemm named in nodes_to_exclude is still rewritten and
    quantized by ORT, as it always was here, so no earlier result changes.)"""
    import onnx
    from onnx import helper, numpy_helper

    graph_model = onnx.load(str(model))
    graph = graph_model.graph
    weights = {w.name: w for w in graph.initializer}
    given, rewritten = set(names), []
    nodes = []
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        plain = attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0
        if node.op_type != "Gemm" or node.name not in given or not plain or attrs.get("transA", 0):
            nodes.append(node)
            continue
        b = node.input[1]
        if attrs.get("transB", 0):
            if b in weights:
                copy = numpy_helper.from_array(
                    numpy_helper.to_array(weights[b]).T, f"{node.name}_B_T"
                )
                graph.initializer.append(copy)
                b = copy.name
            else:
                nodes.append(
                    helper.make_node("Transpose", [b], [f"{b}_{node.name}_T"], f"{node.name}_T")
                )
                b = f"{b}_{node.name}_T"
        biased = len(node.input) > 2 and bool(node.input[2])
        product = node.output[0] + ("_MatMul" if biased else "")
        nodes.append(
            helper.make_node("MatMul", [node.input[0], b], [product], f"{node.name}_MatMul")
        )
        rewritten.append(f"{node.name}_MatMul")
        if biased:
            nodes.append(
                helper.make_node(
                    "Add", [product, node.input[2]], [node.output[0]], f"{node.name}_Add"
                )
            )
            rewritten.append(f"{node.name}_Add")
    if rewritten:
        graph.ClearField("node")
        graph.node.extend(nodes)
        onnx.save(graph_model, str(out))
    return rewritten
