"""quantize_search: the fastest quantized model that keeps the accuracy the recipe asks for."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ortflow.api import (
    ArtifactKind,
    Better,
    Json,
    KnownMetrics,
    Port,
    SettingsStage,
    Stage,
    StageContext,
    StageResult,
)

# isort: split
from ortflow.api import params_problems, stage_type
from ortflow.api.ports import metric_in
from ortflow.api.providers import uses_cuda
from ortflow.stages.search import space as search_space
from ortflow.stages.search.candidate_steps import accuracy_target
from ortflow.stages.search.quantization_search import FAMILIES, Search
from ortflow.stages.search.settings import SearchSettings

WEIGHTED_OPS = ("Conv", "Gemm", "MatMul")  # the op-type subset in the default static space


class QuantizeSearch(SettingsStage[SearchSettings]):
    type = "quantize_search"
    step_types = (*FAMILIES.values(), "validate_accuracy", "benchmark", "quantization_debug")
    version = "6"  # 3: culprit-first probes; 4: any metric; 5: every base's culprits first; 6: ISA-pruned axes
    exclusive = True  # it times candidates
    deterministic = False  # which candidate wins depends on timings
    description = (
        "Search quantization settings for the fastest model that meets accuracy gates: every combination of "
        "the listed quantize_dynamic / quantize_static parameter values (from each given float model and "
        "calibration table) is built, checked with validate_accuracy and timed with benchmark against the "
        "reference; when the fastest ones miss the gates, each quantized node is kept in float alone to rank "
        "nodes by harm, and the most harmful are kept in float until the gates are met. Every build, check "
        "and timing is a cached step, so a re-run (after a crash, or with a tighter target) reuses them."
    )
    inputs = (
        Port(
            "reference",
            ArtifactKind.ONNX_MODEL,
            "the float model accuracy and speed are measured against",
        ),
        Port(
            "models",
            ArtifactKind.ONNX_MODEL,
            "float models to quantize, e.g. the original and its fused graph",
            many=True,
        ),
        Port(
            "data", ArtifactKind.DATASET, "held-out feeds for the accuracy checks and the timings"
        ),
        Port(
            "calibrations",
            ArtifactKind.CALIBRATION_TABLE,
            "calibrate tables for static candidates (each is tried with the models it fits)",
            many=True,
            optional=True,
        ),
        metric_in(),
    )
    outputs = (
        Port(
            "model",
            ArtifactKind.ONNX_MODEL,
            "the chosen model (absent when none meets the gates)",
            filename="model.onnx",
            optional=True,
        ),
        Port(
            "search",
            ArtifactKind.METRICS,
            "every candidate tried, the node ranking, the Pareto front",
            filename="search.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "accuracy": {
                "type": "object",
                "default": {},
                "description": "validate_accuracy parameters; its min/max gates are the target, "
                "e.g. {outputs: [out], min: {cosine_mean: 0.99}}",
            },
            "benchmark": {
                "type": "object",
                "default": {"runs": 200, "rounds": 4, "peak_memory": False},
                "description": "benchmark parameters for timing each candidate against the reference "
                "(providers, threads, batch_size, sequence_length, runs, ...)",
            },
            "families": {
                "type": "array",
                "items": {"enum": list(FAMILIES)},
                "uniqueItems": True,
                "minItems": 1,
                "default": ["dynamic", "static"],
                "description": "dynamic (quantize_dynamic), static (quantize_static, needs calibrations), "
                "weights (quantize_weights)",
            },
            "dynamic": {
                "type": "object",
                "default": {
                    "per_channel": [True, False],
                    "weight_type": ["QInt8", "QUInt8"],
                    "reduce_range": [True, False],
                },
                "description": "quantize_dynamic parameters; a list of values is a choice to try each of. "
                "Combinations the target's CPU cannot use are pruned (stages/quantization/isa.py)",
            },
            "weights": {
                "type": "object",
                "default": {"bits": [8, 4]},
                "description": "quantize_weights parameters (weight-only MatMulNBits; family `weights`, not in "
                "the default families: it pays for large weights and single-row decoding)",
            },
            "static": {
                "type": "object",
                "default": {
                    "per_channel": [True, False],
                    "activation_type": ["QUInt8", "QInt8"],
                    "weight_type": ["QInt8", "QUInt8"],
                    "reduce_range": [True, False],
                    "op_types_to_quantize": [[], list(WEIGHTED_OPS)],
                },
                "description": "quantize_static parameters; a list of values is a choice to try each of (a list of "
                "lists, between lists). By default: every op type ORT quantizes, or only those with "
                "weights, which alone fixed a classifier whose LayerNorm is exported as primitive ops",
            },
            "repair": {
                "type": "integer",
                "minimum": 0,
                "default": 2,
                "description": "how many of the fastest candidates that miss the gates get a per-node analysis",
            },
            "max_excluded": {
                "type": "integer",
                "minimum": 1,
                "default": 8,
                "description": "at most this many nodes kept in float to meet the gates",
            },
            "max_candidates": {
                "type": "integer",
                "minimum": 1,
                "default": 80,
                "description": "a budget: at most this many models built",
            },
            "seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 1800,
                "description": "a budget: no new candidate is started after this many seconds",
            },
            "tie": {
                "type": "number",
                "minimum": 0,
                "default": 0.03,
                "description": "speedups within this fraction of the best are a tie, won by the more accurate",
            },
        },
    }

    settings = SearchSettings

    def problems(self, settings: SearchSettings) -> list[str]:
        problems = [
            f"accuracy: {p}" for p in _problems(stage_type("validate_accuracy"), settings.accuracy)
        ]
        if not settings.accuracy.get("min") and not settings.accuracy.get("max"):
            problems.append(
                "accuracy needs a target: min (e.g. {cosine_mean: 0.99}) or max (e.g. {max_abs: 0.01})"
            )
        problems += [
            f"benchmark: {p}" for p in _problems(stage_type("benchmark"), settings.benchmark)
        ]
        for family in FAMILIES:
            stage_cls = stage_type(FAMILIES[family])
            space = settings.space(family)  # an object: the schema says so
            if family in settings.families and isinstance(space, dict):
                for combination in search_space.grid(space, stage_cls.params_schema):
                    if not search_space.unsupported(
                        combination
                    ):  # pruned from the grid, not an error
                        problems += [f"{family}: {p}" for p in _problems(stage_cls, combination)]
        return sorted(set(problems))

    def metrics_known(
        self, settings: SearchSettings, files: dict[str, Path]
    ) -> dict[str, Better] | None:
        return stage_type("validate_accuracy")().metric_names(
            accuracy_target(settings.accuracy), files
        )

    def metric_problems(self, settings: SearchSettings, known: KnownMetrics) -> list[str]:
        """Its accuracy target names metrics its accuracy checks compute, as validate_accuracy's gates would."""
        return [
            f"accuracy: {p}"
            for p in stage_type("validate_accuracy")().check_metrics(
                accuracy_target(settings.accuracy), known
            )
        ]

    def facts(self, settings: SearchSettings) -> tuple[str, ...]:
        providers = settings.benchmark.get("providers", [])
        return (
            "onnxruntime",
            "onnx",
            "numpy",
            "cpu",
            "isa",
            "target_isa",
            "gpu",
            "providers",
            "python",
            *(("cuda_provider",) if isinstance(providers, list) and uses_cuda(providers) else ()),
        )

    def run(self, ctx: StageContext) -> StageResult:
        search = Search(ctx)
        search.run()
        return search.finish()


def _problems(stage_cls: type[Stage], params: Mapping[str, Json]) -> list[str]:
    if not isinstance(params, dict):
        return ["must be a mapping"]
    return params_problems(stage_cls, params)
