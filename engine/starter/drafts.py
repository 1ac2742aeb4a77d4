"""What `engine init` drafts before writing a recipe: the target it proposes for, and one stage as a draft (its
name, type, inputs, parameters and the comment explaining it). Their own module, so that the proposals for each
target (engine.starter.proposal, engine.starter.gpu_target) share them without importing each other."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypedDict

from ortflow.engine.leaves.json_types import Json

# the partial-INT8 search's default budget (models built, whole-model INT8 included): a count, not seconds, so
# the model init's recipe delivers is the same on every machine
PARTIAL_CANDIDATES = 6


class Target(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"


# A drafted stage's `in:`: each port's reference (`inputs.model`, `quant.model`), or several for a port that
# takes a list.
InputRefs = dict[str, "str | list[str]"]


class ProviderWith(TypedDict):
    """An execution provider with options, as the benchmark's `providers` list names one."""

    name: str
    options: dict[str, Json]  # the provider's own options, passed to ORT as written


class MetricWith(TypedDict, total=False):
    """One metric's block under validate_accuracy's `metrics:`, with the keys init sets: detection (output,
    score_threshold and the head's reading, engine.leaves.detection_heads.HeadWith), exact (outputs,
    argmax_axis or threshold), dense_map (outputs)."""

    output: str
    score_threshold: float
    layout: str
    objectness: bool
    strides: list[int]
    outputs: list[str]
    argmax_axis: int
    threshold: float


class StageWith(TypedDict, total=False):
    """A drafted stage's `with:`: the keys init writes for each stage type it proposes, typed once here so the
    proposals build them by name; the stage's own params_schema judges the recipe when it is validated."""

    # quantize_static, quantize_dynamic
    per_channel: bool
    op_types_to_quantize: str | list[str]  # "auto" or the op types
    keep_float_first: int
    # graph_optimization, transformer_fusion, convert_float16, tensorrt_engine, specialize
    level: str
    model_type: str
    use_gpu: bool
    keep_io_types: bool
    fp16: bool
    freeze_from_data: list[str]
    shapes_from_data: bool
    dims: dict[str, int]
    # validate_accuracy (outputs and metrics: the metric init chose, engine.starter.metric_choice), select,
    # quantize_partial's accuracy
    samples: int
    outputs: list[str]
    metrics: dict[str, MetricWith]
    minimize: str
    min: dict[str, float]
    # benchmark
    runs: int
    seconds: float
    rounds: int
    warmup: int
    peak_memory: bool
    providers: list[str | ProviderWith]
    io_binding: bool
    cuda_graph: list[bool]
    # quantize_partial: the int8 stage's settings, the accuracy it must keep, its budget
    quantize: StageWith
    accuracy: StageWith
    max_candidates: int


@dataclass
class StageDraft:
    name: str
    uses: str
    inputs: InputRefs
    params: StageWith = field(default_factory=StageWith)
    comments: list[str] = field(default_factory=list)
    optional: bool = False
