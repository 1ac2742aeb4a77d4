"""quantize_partial: the largest INT8 part of a model that keeps the task metric, where whole-model INT8 misses."""

from __future__ import annotations

from pathlib import Path

from ortflow.api import (
    ArtifactKind,
    Better,
    KnownMetrics,
    Params,
    Port,
    Stage,
    StageContext,
    StageResult,
)

# isort: split
from ortflow.api import params_problems, settings_of, stage_type
from ortflow.api.ports import metric_in
from ortflow.stages.search.candidate_steps import accuracy_params
from ortflow.stages.search.partial_search import PartialSearch
from ortflow.stages.search.settings import PartialSettings


class QuantizePartial(Stage):
    type = "quantize_partial"
    step_types = ("quantize_static", "quantize_dynamic", "validate_accuracy", "quantization_debug")
    # 2: culprits ranked on the pre-processed graph; refused where whole-model INT8 passes. 3: the doubling stops
    # when 1, 2 and 4 culprits float recover under a quarter of whole-model INT8's shortfall
    version = "3"
    description = (
        "Partial INT8: quantize the model as `quantize` says (quantize_static with a `calibration` table, "
        "quantize_dynamic without) and check it against the accuracy target on the held-out data; where "
        "whole-model INT8 meets it, the stage delivers nothing and says so (gate failed: the quantize "
        "stage's own model is that candidate, not to be built and timed twice); where it misses, localise "
        "the error (quantization_debug: the nodes across which SQNR drops most, on the graph the quantizer "
        "was given), keep the worst culprits float (1, 2, 4, ... then bisected down to the fewest that "
        "pass) and re-check, within a budget of max_candidates models (stopping early when 1, 2 and 4 "
        "kept float recover under a quarter of whole-model INT8's shortfall: the error is spread, not "
        "carried by a few nodes). The summary names the nodes kept "
        "float and their measured SQNR drop. Nothing is timed: candidates are judged on accuracy, so the "
        "model chosen does not depend on the machine's speed (a `seconds` budget, where set, does; the "
        "summary says when it cut the search); a `select` stage times it against the rest."
    )
    inputs = (
        Port(
            "model",
            ArtifactKind.ONNX_MODEL,
            "the float model to quantize, and the accuracy reference",
        ),
        Port(
            "data",
            ArtifactKind.DATASET,
            "held-out real samples: the accuracy checks and the error localisation",
        ),
        Port(
            "calibration",
            ArtifactKind.CALIBRATION_TABLE,
            "a calibrate table: static INT8 (without one: dynamic INT8)",
            optional=True,
        ),
        Port(
            "sanity_data",
            ArtifactKind.DATASET,
            "samples for each candidate's sanity check, every output (state included) against the float "
            "model's (default: `data`); init gives it the samples the whole-model INT8 stage checks on",
            optional=True,
        ),
        metric_in(),
    )
    outputs = (
        Port(
            "model",
            ArtifactKind.ONNX_MODEL,
            "the chosen model (absent when no part met the target)",
            filename="model.onnx",
            optional=True,
        ),
        Port(
            "search",
            ArtifactKind.METRICS,
            "every candidate tried and the nodes kept float",
            filename="partial.json",
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
            "quantize": {
                "type": "object",
                "default": {},
                "description": "the quantize_static (with a calibration) or quantize_dynamic parameters; "
                "the nodes kept float are added to its nodes_to_exclude",
            },
            "max_candidates": {
                "type": "integer",
                "minimum": 1,
                "default": 6,
                "description": "a budget: at most this many models built (whole-model INT8 included; 1: "
                "only check it, and say by how much it misses)",
            },
            "max_float": {
                "type": "integer",
                "minimum": 1,
                "default": 64,
                "description": "at most this many nodes kept float (the worst culprits, by SQNR drop)",
            },
            "seconds": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "default": None,
                "description": "a time budget: no candidate started after this many seconds; null (the "
                "default) for none, so the choice is the same on every machine",
            },
        },
    }

    def check(self, params: Params) -> list[str]:
        accuracy = dict(settings_of(PartialSettings, params).accuracy)
        problems = [
            f"accuracy: {p}" for p in params_problems(stage_type("validate_accuracy"), accuracy)
        ]
        if not accuracy.get("min") and not accuracy.get("max"):
            problems.append(
                "accuracy needs a target: min (e.g. {cosine_mean: 0.99}) or max (e.g. {max_abs: 0.01})"
            )
        return problems

    def metric_names(self, params: Params, files: dict[str, Path]) -> dict[str, Better] | None:
        return stage_type("validate_accuracy")().metric_names(accuracy_params(dict(params)), files)

    def check_metrics(self, params: Params, known: KnownMetrics) -> list[str]:
        """Its target names metrics its accuracy checks compute, as validate_accuracy's gates would."""
        return [
            f"accuracy: {p}"
            for p in stage_type("validate_accuracy")().check_metrics(
                accuracy_params(dict(params)), known
            )
        ]

    def env_facts(self, params: Params) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy", "isa", "target_isa")  # INT8 kernels differ by ISA

    def run(self, ctx: StageContext) -> StageResult:
        return PartialSearch(ctx).run()
