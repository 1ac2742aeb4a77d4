"""Calibration in passes: which tensors calibration reads, how many bytes each holds per sample, and groups of
them whose values for one batch fit a memory bound, each group read by its own run over the data.

ORT's calibrators make every tensor to calibrate a graph output, so one batch's run returns all of them at once
(MiniLM, 8 x 128 tokens: 312 MB). A graph output stays alive until the run returns; an intermediate tensor is
freed once its consumers have run. A pass model whose outputs are only its group's tensors therefore holds
only that group, and each tensor's values are the same in every pass (the graph and ORT's settings are the
same; optimizations are off, as in ORT's calibrators), so the table does not depend on the passes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.api import onnx as onnx_model

if TYPE_CHECKING:
    from onnx import ValueInfoProto

    from ortflow.api import Feed

MB = 1024 * 1024


@dataclass(frozen=True)
class Pass:
    """One run over the data, reading `tensors`; `estimated_bytes`: what their values for one batch hold."""

    tensors: tuple[str, ...]
    estimated_bytes: int


def tensors_to_calibrate(model: Path, op_types: list[str]) -> dict[str, ValueInfoProto]:
    """Tensor name -> value info, in graph order: what ORT's calibrators would calibrate (float inputs and
    outputs of the nodes of `op_types`, or of every node; never initializers), chosen by ORT's own rule on the
    graph ONNX's shape inference types, as ORT's calibrators do, but without loading the weights (a model
    over 2 GB would otherwise sit in memory beside every session)."""
    from types import SimpleNamespace

    import onnx
    from onnxruntime.quantization.calibrate import CalibraterBase

    inferred = model.with_name(f"{model.stem}-inferred-graph.onnx")
    onnx.shape_inference.infer_shapes_path(str(model), str(inferred))
    graph = onnx_model.load_graph(inferred)
    inferred.unlink()
    rule = SimpleNamespace(
        op_types_to_calibrate=op_types or None
    )  # all the rule reads of a calibrator
    chosen, value_infos = CalibraterBase.select_tensors_to_calibrate(rule, graph)
    order = [name for node in graph.graph.node for name in (*node.input, *node.output)]
    return {name: value_infos[name] for name in dict.fromkeys(order) if name in chosen}


def pass_model(model: Path, outputs: list[Any], name: str) -> Path:
    """The model with exactly `outputs` (value infos) as its graph outputs, saved beside `model` so the
    external-data files it names still resolve."""
    graph_model = onnx_model.load_graph(
        model
    )  # without its external data: the copy names the same files
    del graph_model.graph.output[:]
    graph_model.graph.output.extend(outputs)
    path = model.parent / name
    onnx_model.save(graph_model, path)
    return path


def session(path: Path) -> Any:
    """An ORT session as ORT's calibrators make one: graph optimizations off, so the values a tensor takes do
    not depend on which tensors are outputs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return onnx_model.load_for_ort(path, options)


def bytes_per_sample(
    model: Path, tensors: dict[str, ValueInfoProto], sample: Feed, samples: int
) -> dict[str, int]:
    """Each tensor's bytes for one sample, measured by running `sample` (holding `samples` samples) once with
    every tensor an output: one sample's values, a batch-size share of an unbounded batch."""
    probe = session(pass_model(model, list(tensors.values()), "calibration-probe.onnx"))
    names = [o.name for o in probe.get_outputs()]
    values = probe.run(names, sample)
    return {name: -(-value.nbytes // samples) for name, value in zip(names, values)}


def schedule(sizes: dict[str, int], batch_size: int, bound_bytes: int | None) -> list[Pass]:
    """Groups of tensors, in graph order, whose values for one batch stay within `bound_bytes` (one group
    when unbounded; a tensor larger than the bound alone gets a pass of its own)."""
    if bound_bytes is None:
        return [Pass(tuple(sizes), sum(sizes.values()) * batch_size)]
    passes: list[Pass] = []
    group: list[str] = []
    held = 0
    for name, size in sizes.items():
        need = size * batch_size
        if group and held + need > bound_bytes:
            passes.append(Pass(tuple(group), held))
            group, held = [], 0
        group.append(name)
        held += need
    if group:
        passes.append(Pass(tuple(group), held))
    return passes
