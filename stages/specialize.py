"""specialize: the model for the shapes and values it is deployed with. Fixing dims and freezing inputs to
constants lets a well-kept folder (onnxscript's optimizer, on onnx-ir) remove the shape arithmetic, and the `If`s
whose condition became constant, so the graph a quantizer or a CUDA graph sees is the network alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ortflow.api import (
    FROZEN_INPUTS,
    ArtifactKind,
    DataProvenance,
    DataSource,
    Feed,
    ModelInput,
    Port,
    Stage,
    StageContext,
    StageError,
    StageResult,
    model_inputs,
)
from ortflow.api import onnx as onnx_model

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

# onnxscript's defaults keep large constants unfolded to keep files small; a specialized model trades that for a
# graph without the arithmetic (a weight sliced into LSTM gates is folded once here rather than on every call).
FOLD_INPUT_LIMIT = 1 << 22
FOLD_OUTPUT_LIMIT = 1 << 22
FOLD_ROUNDS = 4
SHAPE_SOURCES = ("Shape", "Size")


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
        frozen = [f"{n} = {_shown(v)}" + (" (data)" if n in self.from_data else "") for n, v in self.frozen.items()]
        parts = (["fixed " + ", ".join(fixed)] if fixed else []) + (["froze " + ", ".join(frozen)] if frozen else [])
        return "; ".join(parts) or "nothing fixed or frozen"

    def to_json(self) -> dict[str, Any]:
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
        return cls(_count(model.graph, lambda n: True), _count(model.graph, lambda n: n.op_type == "If"), _shape_nodes(model.graph))


class Specialize(Stage):
    type = "specialize"
    version = "1"
    description = (
        "Specialize a model for fixed shapes and input values: fix dims (by name, or an input's whole shape), "
        "freeze inputs to constants (removed from the inputs; values from params or from the data, e.g. a VAD's "
        "sample rate), then fold constants, shape arithmetic and Ifs whose condition became constant with "
        "onnxscript's optimizer. Checked: outputs equal the original's on the data's feeds (random feeds without "
        "data) within atol + rtol*|reference|."
    )
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the model to specialize"),
        Port(
            "data",
            ArtifactKind.DATASET,
            "samples: the values and shapes taken from the data, and the feeds of the equality check",
            optional=True,
        ),
    )
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the specialized model", filename="model.onnx"),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "what was fixed, frozen and removed, and the equality check",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "dims": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 1},
                "default": {},
                "description": "symbolic dims fixed by name, e.g. {batch_size: 1, sequence_length: 128}",
            },
            "shapes": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                "default": {},
                "description": "inputs' whole shapes, e.g. {input: [1, 576]} (for dims without names)",
            },
            "freeze": {
                "type": "object",
                "additionalProperties": {"type": ["number", "array"]},
                "default": {},
                "description": "inputs frozen to constants (removed from the inputs), e.g. {sr: 16000}",
            },
            "freeze_from_data": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "inputs frozen to the one value the data gives them (an error if it gives several)",
            },
            "shapes_from_data": {
                "type": "boolean",
                "default": False,
                "description": "fix every input not named in `shapes` to the shape of the data's first sample",
            },
            "samples": {"type": "integer", "minimum": 1, "default": 16, "description": "feeds of the equality check"},
            "atol": {"type": "number", "minimum": 0, "default": 1e-4, "description": "the check's absolute tolerance"},
            "rtol": {"type": "number", "minimum": 0, "default": 1e-3, "description": "the check's relative tolerance"},
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        both = sorted(set(params.get("freeze", {})) & set(params.get("freeze_from_data", [])))
        return [f"specialize: {', '.join(both)} named in both freeze and freeze_from_data — keep one"] if both else []

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "onnxscript")

    def run(self, ctx: StageContext) -> StageResult:
        import onnx

        params = ctx.params
        source = onnx_model.model_file(ctx.path("model"))
        inputs = model_inputs(source)
        feeds = list(ctx.dataset("data").feeds(inputs, limit=params["samples"])) if ctx.has("data") else []
        if not feeds and (params["freeze_from_data"] or params["shapes_from_data"]):
            raise StageError("specialize: freeze_from_data and shapes_from_data read the data — give the stage `data:`")
        spec = plan(params, inputs, feeds)
        model = onnx.load(str(source))
        before = GraphCounts.of(model)
        apply(model, spec, inputs)
        model = fold(model)
        after = GraphCounts.of(model)
        target = onnx_model.save(model, ctx.output_path("model"))
        onnx_model.check(target)
        checked, data = _check_feeds(ctx, spec, inputs, feeds)
        worst = compare(source, target, spec, checked, params["atol"], params["rtol"])
        tolerance = f"atol {params['atol']:g} + rtol {params['rtol']:g}"
        metrics = {  # no paths: the same inputs give the same bytes wherever the project lies
            "specialization": spec.to_json(),
            "before": before.__dict__,
            "after": after.__dict__,
            "check": {"feeds": len(checked), "max_abs": worst, "tolerance": tolerance, "data": data.provenance.value},
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = (
            f"{spec.describe()}; nodes {before.nodes} -> {after.nodes} (If {before.ifs} -> {after.ifs}, shape "
            f"ops {before.shape_nodes} -> {after.shape_nodes}); outputs equal within {tolerance} on {len(checked)} "
            f"feeds (max |diff| {worst:.2g}, {data.label()})"
        )
        kept = {"nodes_before": before.nodes, "nodes_after": after.nodes, "ifs_removed": before.ifs - after.ifs}
        return StageResult(summary=summary, metrics={**kept, "max_abs": worst}, data_source=data)


def plan(params: dict[str, Any], inputs: list[ModelInput], feeds: list[Feed]) -> Specialization:
    """The shapes and values asked for, checked against the model's inputs (each message names the fix)."""
    import numpy as np

    by_name = {i.name: i for i in inputs}
    named = ", ".join(i.name for i in inputs)
    for name in [*params["shapes"], *params["freeze"], *params["freeze_from_data"]]:
        if name not in by_name:
            raise StageError(f"specialize: the model has no input '{name}' — its inputs are {named}")
    known = {d for i in inputs for d in i.shape if isinstance(d, str)}
    for dim in params["dims"]:
        if dim not in known:
            raise StageError(f"specialize: no input has a dim named '{dim}' (named dims: {', '.join(sorted(known)) or 'none'}) — use `shapes`")
    spec = Specialization(dims=dict(params["dims"]))
    for name, value in params["freeze"].items():
        spec.frozen[name] = _value(by_name[name], np.asarray(value))
    for name in params["freeze_from_data"]:
        spec.frozen[name] = _value(by_name[name], _one_value(name, feeds))
        spec.from_data.add(name)
    for name, shape in params["shapes"].items():
        spec.shapes[name] = _shape(by_name[name], tuple(shape))
    if params["shapes_from_data"]:
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
        shown = ", ".join(_shown(v) for v in list(values.values())[:3])
        raise StageError(
            f"specialize: the data gives input '{name}' {len(values)} values ({shown}) — specialize for one "
            f"(freeze: {{{name}: ...}}) and use data of that value"
        )
    return next(iter(values.values()))


def _shape(spec: ModelInput, shape: tuple[int, ...]) -> tuple[int, ...]:
    fixed = [isinstance(d, int) and d > 0 for d in spec.shape]
    if len(shape) != len(spec.shape) or any(f and d != s for f, d, s in zip(fixed, spec.shape, shape)):
        raise StageError(f"specialize: input '{spec.name}' is {spec.describe()}, which {list(shape)} does not fit — give a shape of that rank")
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
    if spec.frozen:  # what data made for the original still carries, and Dataset.feeds drops (checking it)
        frozen = {n: v.tolist() for n, v in spec.frozen.items()}
        model.metadata_props.add(key=FROZEN_INPUTS, value=json.dumps(frozen, sort_keys=True))


def fold(model: Any) -> Any:
    """onnxscript's optimizer: constant folding with shape inference, Ifs on constant conditions inlined, unused
    nodes and initializers removed. ConstantOfShape, which it keeps by default to save bytes, is folded too."""
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
    return ir.serde.serialize_model(graph)


def compare(source: Path, target: Path, spec: Specialization, feeds: list[Feed], atol: float, rtol: float) -> float:
    """The largest |difference| between the outputs of both models; a StageError naming the output and the
    sample when one is beyond atol + rtol*|reference| (a fold that changed what the model computes)."""
    import numpy as np

    reference, specialized = onnx_model.load_for_ort(source), onnx_model.load_for_ort(target)
    names = [o.name for o in reference.get_outputs()]
    worst = 0.0
    for index, feed in enumerate(feeds):
        full = {**feed, **spec.frozen}
        wanted = reference.run(names, full)
        got = specialized.run(names, {k: v for k, v in feed.items() if k not in spec.frozen})
        for name, a, b in zip(names, wanted, got):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
            if a.shape != b.shape or np.any(diff > atol + rtol * np.abs(a)):
                raise StageError(
                    f"specialize: output '{name}' of the specialized model differs from the original's on feed {index} "
                    f"(max |diff| {float(diff.max(initial=0.0)):.3g}, shapes {list(a.shape)} vs {list(b.shape)}; tolerance "
                    f"atol {atol:g} + rtol {rtol:g}) — a fold changed what the model computes: freeze fewer inputs, or "
                    "report the model to onnxscript's optimizer"
                )
    return worst


def _check_feeds(ctx: StageContext, spec: Specialization, inputs: list[ModelInput], feeds: list[Feed]) -> tuple[list[Feed], DataSource]:
    """The feeds of the equality check: the data's samples in the fixed shapes, or random feeds in them."""
    if feeds:
        fitting = [f for f in feeds if all(f[n].shape == s for n, s in spec.shapes.items())]
        if not fitting:
            raise StageError("specialize: no sample of the data has the fixed shapes — fix the shapes the data has (shapes_from_data: true)")
        return fitting, ctx.dataset("data").source()
    return _random_feeds(spec, inputs, ctx.params["samples"]), DataSource(DataProvenance.RANDOM, "random")


def _random_feeds(spec: Specialization, inputs: list[ModelInput], count: int) -> list[Feed]:
    import numpy as np

    rng = np.random.default_rng(0)
    feeds = []
    for _ in range(count):
        feed = {}
        for item in inputs:
            if item.name in spec.frozen:
                continue
            shape = spec.shapes.get(item.name) or tuple(d if isinstance(d, int) and d > 0 else spec.dims.get(d) for d in item.shape)
            if any(not isinstance(d, int) for d in shape):
                raise StageError(f"specialize: input '{item.name}' ({item.describe()}) keeps a free dim — fix it (dims or shapes), or give `data:`")
            kind = np.dtype(item.dtype)
            feed[item.name] = rng.integers(0, 2, size=shape).astype(kind) if kind.kind in "iub" else rng.standard_normal(shape).astype(kind)
        feeds.append(feed)
    return feeds


def _clear_value_info(graph: Any) -> None:
    del graph.value_info[:]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _clear_value_info(attribute.g)


def _subgraphs(node: Any) -> list[Any]:
    return [a.g for a in node.attribute if a.HasField("g")] + [g for a in node.attribute for g in a.graphs]


def _count(graph: Any, wanted: Any) -> int:
    return sum(int(wanted(n)) + sum(_count(g, wanted) for g in _subgraphs(n)) for n in graph.node)


def _shape_nodes(graph: Any) -> int:
    """Nodes computing shapes: Shape/Size, and nodes whose inputs are all shape values or constants (with at least
    one shape value), e.g. Gather on a shape, Concat of dims, Equal/Where on them; in subgraphs too."""
    constant = {t.name for t in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    shaped: set[str] = set()
    count = 0
    for node in graph.node:
        present = [i for i in node.input if i]
        if node.op_type in SHAPE_SOURCES or (
            any(i in shaped for i in present) and all(i in shaped or i in constant for i in present)
        ):
            shaped.update(node.output)
            count += 1
        count += sum(_shape_nodes(g) for g in _subgraphs(node))
    return count


def _shown(value: np.ndarray) -> str:
    return str(value.item()) if value.size == 1 else f"{list(value.shape)} array"
