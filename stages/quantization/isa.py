"""ORT's safe INT8 settings for the instruction set a recipe targets (its `target_isa` environment fact).

x86 CPUs without VNNI compute u8 x s8 products with instructions that saturate (vpmaddubsw adds two
products into an int16); ORT's quantization documentation answers this with `reduce_range` (7-bit weights),
"especially for per-channel mode". Measured on an AVX2-only host (mean cosine against fp32), it is a rule
for MatMul-heavy models with per-channel scales, not a general one:

  MiniLM (MatMul), dynamic:        per-channel 0.9797 -> 0.9959 with 7-bit;  per-tensor 0.9742 -> 0.9232
  MiniLM (MatMul), static QDQ:     per-channel 0.9469 -> 0.9618;             per-tensor 0.9463 -> 0.9029
  PP-OCRv4 detector (Conv), static: per-channel 0.9843 -> 0.9765;             per-tensor 0.9693 -> 0.9430

No rule per op type is right: a YOLOv8 detector (NudeNet 320n, all Conv) collapses without 7-bit weights (class
scores' cosine 0.69, with reduce_range 0.955). So `auto` decides per model from evidence where it has some
(`decide`): saturation.py emulates the saturating kernel on real samples, and saturation_outputs.py how far
its saturation reaches the outputs against how far 7-bit weights do (CLEAR times worse either way decides).
Emulated here (the verdicts need no AVX2 host; squared relative error of the worst output channel): NudeNet
7-bit (a class-score channel 5.1 against 0.36), MiniLM static per-channel 7-bit (0.054 against 0.0019), dynamic
per-tensor 8-bit (as measured above), PP-OCRv4's detector inconclusive (0.0054 against 0.0083). Without
samples, or where neither clearly wins, `auto` falls back to the rule of thumb: 7-bit weights only for
per-channel scales, int8 weights and a model whose quantizable ops are mostly MatMul/Gemm.
Never with VNNI (the avx2-vnni, avx512-vnni and amx kernel families), on arm64, or for uint8 weights (u8 x u8
products are widened to int16 first: they never saturate).

The other answer is uint8 weights: exact without VNNI, but MLAS's u8 x u8 kernel is slower than its u8 x s8 one.
MiniLM, dynamic per-channel, 2 threads on the AVX2 host: int8 0.9818 at 6.6 ms, int8 7-bit 0.9961 at 6.5 ms,
uint8 0.9968 at 7.8 ms (fp32 9.9 ms). `wasted` and `kernel_rank` below turn these facts into the search's
pruning and order (quantize_search).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

from ortflow.api import Json, JsonObject, StageError, int8_saturates
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import saturation_evidence
from ortflow.stages.quantization.saturation_evidence import Evidence

if TYPE_CHECKING:
    from ortflow.api import Feed, StageContext
    from ortflow.stages.quantization.ort_quantizer import DynamicSettings, StaticSettings

# decide: 7-bit weights when saturation damages the outputs this many times more than 7-bit weights do (squared
# relative error where each is worst), 8-bit when this many times less; between the two, no verdict.
CLEAR = 3.0
NEGLIGIBLE = 1e-5  # output damage (squared relative error) below this is no evidence of harm

REDUCE_RANGE_PARAM: JsonObject = {
    "enum": ["auto", True, False],
    "default": "auto",
    "description": "7-bit weights; auto: for an x86 target without VNNI, on where an emulation of its "
    "saturating u8 x s8 kernel on real samples shows saturation costing more than 7-bit weights (without "
    "samples: per-channel scales on a MatMul-heavy model); off otherwise",
}


def saturates(isa: str) -> bool:
    """The isa fact (`x86_64: avx2`, an INT8 kernel family) names an x86 kernel without VNNI."""
    return int8_saturates(isa)


def needs_isa(params: dict[str, Any]) -> bool:
    """Whether the stage's result depends on the target's instruction set (then target_isa is in its key)."""
    return params.get("reduce_range") == "auto"


@dataclass(frozen=True)
class WeightChoice:
    """What `reduce_range` decides from, read once from a quantize stage's settings."""

    reduce_range: str | bool  # auto, or as given
    per_channel: bool
    u8_activations: bool = True  # QUInt8 activations (dynamic quantization's always are)
    s8_weights: bool = True  # QInt8 weights

    @classmethod
    def of(
        cls, settings: StaticSettings | DynamicSettings, activation_type: str = "QUInt8"
    ) -> WeightChoice:
        """A quantize stage's choice; `activation_type`: quantize_static's, or QUInt8 for quantize_dynamic
        (ORT quantizes its activations to uint8 at run time)."""
        return cls(
            settings.reduce_range,
            settings.per_channel,
            activation_type == "QUInt8",
            settings.weight_type == "QInt8",
        )


@dataclass(frozen=True)
class Quantized:
    """What the emulation measures: the float graph ORT's quantizer reads and what the stage has it quantize,
    read once op_table has resolved `op_types_to_quantize: auto` (the recipe's `auto` names no op type: given
    as such, the emulation matched nothing and `auto` fell back to the rule of thumb on every saturating host)."""

    model: Path
    op_types: Sequence[str]  # as ORT's quantizer is given them; empty: every type it quantizes
    excluded: Collection[str]  # the nodes kept float
    samples: Callable[
        [], list[Feed]
    ]  # the stage's real samples, read only for an emulation (seconds)


class Verdict(Enum):
    SEVEN_BIT = "7-bit"
    EIGHT_BIT = "8-bit"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Decision:
    """What the emulation's evidence says about 7-bit weights for one model, and why."""

    verdict: Verdict
    reason: str


def decide(
    isa: str, evidence: Evidence | None, u8_activations: bool = True, s8_weights: bool = True
) -> Decision:
    """7-bit or 8-bit weights for a model on a target with kernel family `isa` (`x86_64: avx2`), from the
    emulation's `evidence` (None: none gathered). Pure: any host can decide for any target."""
    if not (u8_activations and s8_weights and saturates(isa)):
        why = "no u8 x s8 products" if saturates(isa) else f"{_features(isa)} does not saturate"
        return Decision(Verdict.EIGHT_BIT, why)
    if evidence is None or not evidence.ops:
        return Decision(Verdict.INCONCLUSIVE, "no op it could emulate")
    where = (
        "worst case of the calibrated ranges"
        if not evidence.samples
        else f"{evidence.samples} samples"
    )
    worst = max(evidence.ops, key=lambda op: op.relative(op.saturating_error))
    share = sum(op.saturated for op in evidence.ops) / max(1, sum(op.pairs for op in evidence.ops))
    saturated = f"{100 * share:.2g}% of u8 x s8 pair sums"
    if not any(op.saturated for op in evidence.ops):
        return Decision(Verdict.EIGHT_BIT, f"no u8 x s8 pair sum leaves int16 ({where})")
    if not evidence.samples:
        return Decision(Verdict.INCONCLUSIVE, f"{saturated} can leave int16 ({where})")
    said = f"{saturated} leave int16 on {where} (worst op {worst.name})"
    damage = evidence.outputs
    if damage is None:
        return Decision(Verdict.INCONCLUSIVE, f"{said}; its effect on the outputs not measured")
    said += (
        f"; output error (squared, relative) {damage.saturating:.2g} ({damage.where}) against "
        f"{damage.seven_bit:.2g} with 7-bit weights"
    )
    if damage.saturating > CLEAR * damage.seven_bit and damage.saturating > NEGLIGIBLE:
        return Decision(Verdict.SEVEN_BIT, said)
    if damage.saturating * CLEAR < damage.seven_bit or damage.saturating <= NEGLIGIBLE:
        return Decision(Verdict.EIGHT_BIT, said)
    return Decision(Verdict.INCONCLUSIVE, said)


def static_reduce_range(
    settings: StaticSettings,
    env: Mapping[str, str],
    quantized: Quantized,
    ranges: dict[str, tuple[float, float]],
) -> tuple[bool, str]:
    """quantize_static's reduce_range and why, for its summary: `auto`, for a target (env's target_isa) that
    saturates, decided from the emulation of what the stage quantizes on its real samples run through the graph
    the table's `ranges` describe; without real samples, the worst case the ranges allow."""
    choice = WeightChoice.of(settings, settings.activation_type)
    target = env.get("target_isa", "")  # in env where reduce_range is auto (needs_isa)
    evidence = None
    if wants_evidence(choice, target):
        evidence = saturation_evidence.measure(
            quantized.model,
            ranges,
            quantized.samples(),
            choice.per_channel,
            set(quantized.excluded),
            list(quantized.op_types),
        )
    counts = onnx_model.op_counts(quantized.model)
    return reduce_range(choice, target, counts, evidence)


def dynamic_reduce_range(
    settings: DynamicSettings, env: Mapping[str, str], quantized: Quantized
) -> tuple[bool, str]:
    """quantize_dynamic's reduce_range and why: `auto`, for a target that saturates and a stage given real
    samples (its `data`), decided from the emulation with each tensor's own range per sample, as ORT
    quantizes activations at run time; without real samples, the rule of thumb (there is no table whose
    ranges would bound the worst case)."""
    choice = WeightChoice.of(settings)  # activations: uint8, quantized at run time
    target = env.get("target_isa", "")
    feeds = quantized.samples() if wants_evidence(choice, target) else []
    evidence = None
    if feeds:
        evidence = saturation_evidence.measure(
            quantized.model,
            None,
            feeds,
            choice.per_channel,
            set(quantized.excluded),
            list(quantized.op_types),
        )
    counts = onnx_model.op_counts(quantized.model)
    return reduce_range(choice, target, counts, evidence)


def samples(ctx: StageContext, model: Path) -> Callable[[], list[Feed]]:
    """How to read a few of the stage's real samples for the emulation, once it runs: none when the stage
    has only random feeds (noise says nothing about which pairs saturate: the emulation then uses the
    calibrated ranges' worst case)."""
    from ortflow.stages.quantization import sanity

    def read() -> list[Feed]:
        try:
            feeds, synthetic = sanity.feeds_for(ctx, model, saturation_evidence.SAMPLES)
        except StageError:  # random feeds that cannot be made: no samples either way
            return []
        return [] if synthetic else feeds

    return read


def wants_evidence(choice: WeightChoice, target_isa: str) -> bool:
    """Whether `auto` has a choice to make that the saturation emulation can inform (it costs seconds)."""
    return (
        choice.reduce_range == "auto"
        and choice.u8_activations
        and choice.s8_weights
        and saturates(target_isa)
    )


def reduce_range(
    choice: WeightChoice,
    isa: str,
    op_counts: Counter[str],
    evidence: Evidence | None = None,
) -> tuple[bool, str]:
    """The reduce_range to use on a target with kernel family `isa`, and, when `auto` decided, why (for the
    stage's summary). `op_counts`: the float model's nodes by op type; `evidence`: the saturation
    emulation's (None: the rule of thumb)."""
    if choice.reduce_range != "auto":
        return bool(choice.reduce_range), ""
    fallback, why = _rule_of_thumb(choice, isa, op_counts)
    if evidence is None:
        return fallback, why
    decision = decide(isa, evidence, choice.u8_activations, choice.s8_weights)
    if decision.verdict is not Verdict.INCONCLUSIVE:
        on = decision.verdict is Verdict.SEVEN_BIT
        return on, f"{decision.verdict.value} weights for {_features(isa)}: {decision.reason}"
    rule = why or "8-bit weights by the rule of thumb"
    return fallback, f"{rule} (emulation inconclusive: {decision.reason})"


def _rule_of_thumb(choice: WeightChoice, isa: str, op_counts: Counter[str]) -> tuple[bool, str]:
    """The rule `auto` fell back on without evidence: 7-bit weights for per-channel scales on a MatMul model."""
    matmuls = op_counts.get("MatMul", 0) + op_counts.get("Gemm", 0)
    convs = op_counts.get("Conv", 0) + op_counts.get("ConvTranspose", 0)
    if (
        choice.u8_activations
        and choice.s8_weights
        and saturates(isa)
        and choice.per_channel
        and matmuls > convs
    ):
        return (
            True,
            f"7-bit weights for {isa.split(': ', 1)[-1]} (no VNNI, per-channel, MatMul model)",
        )
    return False, ""


# The search's pruning and order read a combination of quantize parameters as the user gave it (the grid's
# JSON, checked by the stage it is then given to; a parameter left out is the stage's default).
def wasted(params: Mapping[str, Json], isa: str) -> str:
    """Why a combination of quantize parameters (weight_type, activation_type, reduce_range) cannot help on
    a target with instruction set `isa`: the search does not build it. Empty when it can."""
    u8_weights = params.get("weight_type") == "QUInt8"
    if params.get("reduce_range") is True and u8_weights:
        return "7-bit uint8 weights: u8 x u8 products never saturate, so they would only lose precision"
    if params.get("reduce_range") is True and not saturates(isa):
        return f"7-bit weights on {_features(isa)}: its int8 products do not saturate, so they would only lose precision"
    if u8_weights and vnni(isa):
        return f"uint8 weights on {_features(isa)}: VNNI multiplies u8 x s8 only; int8 weights are as exact and faster"
    return ""


def kernel_rank(params: Mapping[str, Json], isa: str) -> int:
    """How fast the int8 kernel a combination runs on is expected to be on `isa` (0: fastest). On x86, MLAS's
    u8 x s8 kernels are the fast ones; uint8 weights or signed activations take slower paths."""
    if not isa.startswith("x86_64"):
        return 0
    # signed activations are the slowest: 1.7-3x slower than fp32 on the AVX2 host (README, the sweep's table)
    return int(params.get("weight_type") == "QUInt8") + 2 * int(
        params.get("activation_type") == "QInt8"
    )


def accuracy_rank(params: Mapping[str, Json], isa: str) -> int:
    """How likely a combination keeps accuracy on `isa` (0: likeliest): per-channel scales first; without VNNI,
    full-range int8 weights saturate (u8 x s8), so they come after 7-bit or uint8 weights."""
    saturating = (
        saturates(isa)
        and params.get("weight_type", "QInt8") == "QInt8"
        and params.get("reduce_range") is not True
    )
    return int(params.get("per_channel") is False) * 2 + int(
        saturating and params.get("activation_type") != "QInt8"
    )


def vnni(isa: str) -> bool:
    arch, _, features = isa.partition(":")
    return arch.strip() == "x86_64" and not saturates(isa)


def _features(isa: str) -> str:
    return isa.partition(": ")[2] or isa
