"""A float16 model (or float16 islands inside a float model) on a CPU target: ORT has few float16 kernels on
CPUs, and its quantizer writes QuantizeLinear on float16 tensors that ORT cannot load, so the recipe converts the
model to float32 first (the `fp32` stage, convert_float32), offers that copy as a candidate, and builds every
INT8 candidate from it instead of from the float16 original."""

from __future__ import annotations

from ortflow.engine.ort.model_facts import ModelFacts
from ortflow.engine.starter.drafts import InputRefs, StageDraft

FP32 = "fp32"


def wants_float32(facts: ModelFacts, stage_installed: bool) -> bool:
    """Whether init converts the model to float32 first: float16 inside, not quantized already, and the
    convert_float32 stage installed."""
    return facts.float16_parts > 0 and not facts.already_quantized and stage_installed


def from_float32(
    stages: list[StageDraft], candidates: list[str], facts: ModelFacts, real_data: bool
) -> None:
    """Put the fp32 stage first, every stage that read the original read its float32 copy, and the copy in the
    candidates after the original (which stays the reference accuracy is measured against)."""
    for stage in stages:
        if stage.inputs.get("model") == "inputs.model":
            stage.inputs["model"] = f"{FP32}.model"
    stages.insert(0, _fp32_stage(facts, real_data))
    candidates.insert(1, f"{FP32}.model")


def _fp32_stage(facts: ModelFacts, real_data: bool) -> StageDraft:
    inputs: InputRefs = {"model": "inputs.model"}
    if real_data:
        inputs["data"] = "datasets.calibration"
    return StageDraft(
        FP32,
        "convert_float32",
        inputs,
        {},
        [
            f"the model holds float16 ({facts.float16_parts} float16 weights, inputs or casts to float16): on CPUs",
            "ORT has few float16 kernels, and its quantizer cannot quantize float16 tensors, so the float32 copy",
            "is a candidate and the source of every INT8 one; checked close to the original on "
            + ("your data" if real_data else "random feeds"),
            "not optional: every INT8 candidate is built from it, so a refused copy stops the run with its",
            "reason (the original's float16 rounding mattered: raise the stage's atol/rtol, or leave it out)",
        ],
    )
