"""Where a quantized candidate's error enters: a quantization_debug step on held-out samples ranks the nodes of
the graph the quantizer was given (for static INT8, the float model after ORT's pre-processing, which rewrites
it: a HardSwish into HardSigmoid and Mul) by how much SQNR drops across each, so repairs keep the likeliest
culprits float first, under names nodes_to_exclude takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, cast

from ortflow.api import Artifact, Json, StageError, Steps


@dataclass(frozen=True)
class Culprit:
    node: str
    op_type: str
    sqnr_drop_db: float  # how much the signal-to-quantization-noise ratio fell across the node


def ranked_culprits(
    steps: Steps,
    reference: Artifact,
    model: Artifact,
    data: Artifact,
    labels: dict[str, str | list[str]],
    top: int = 50,
    log: Callable[[str], None] | None = None,
    pre_process: bool | str = False,
) -> list[Culprit]:
    """The nodes where error enters, worst first; [] (said through `log`) for a model the debug run cannot
    follow, so the caller falls back to graph order. `pre_process`: quantize_static's (the reference is
    pre-processed as it was there); False for dynamic INT8, whose quantizer is given the model as it is."""
    try:
        inputs: dict[str, Artifact | list[Artifact]] = {
            "reference": reference,
            "model": model,
            "data": data,
        }
        params = {"samples": 4, "top": top, "pre_process": pre_process}
        step = steps.run("quantization_debug", params, inputs, labels)
        report = step.document("report")
    except StageError as exc:
        if log is not None:
            log(
                f"{labels.get('model', 'model')}: no error ranking ({exc}); probing nodes in graph order"
            )
        return []
    found: dict[str, Culprit] = {}
    for n in _nodes(report):
        node = str(n["node"])
        found.setdefault(node, Culprit(node, str(n["op_type"]), _number(n["jump_db"])))
    return list(found.values())


def _nodes(report: Json) -> list[dict[str, Json]]:
    """quantization_debug's ranked nodes (its report's `nodes`, each {node, op_type, jump_db, ...})."""
    nodes = report.get("nodes") if isinstance(report, dict) else None
    if not isinstance(nodes, list):
        raise TypeError("quantization_debug's report has no `nodes` list")
    return [n for n in nodes if isinstance(n, dict)]


def _number(value: Json) -> float:
    if not isinstance(value, (int, float)):
        raise TypeError(f"quantization_debug's report: {value!r} is no number")
    return float(value)


def node_names(model: Path) -> set[str]:
    """The node names of a model (its graph only; no weights read): a quantized model keeps those of the graph its
    quantizer was given, which ORT's pre-processing may have rewritten (a HardSwish into HardSigmoid and Mul)."""
    import onnx

    target = model / "model.onnx" if model.is_dir() else model
    return {n.name for n in onnx.load(str(target), load_external_data=False).graph.node if n.name}


def quantizer_pre_process(family: str, quantize: Mapping[str, Json]) -> bool | str:
    """The `pre_process` a candidate's quantizer applied: quantize_static's setting (auto by default);
    dynamic INT8 never pre-processes."""
    return cast("bool | str", quantize.get("pre_process", "auto")) if family == "static" else False
