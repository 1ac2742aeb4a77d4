"""What `engine init` proposes for a model and a target (a `Proposal`): which stages to write, and which accuracy
metric gates the choice. Not a plan: a plan is what `engine plan` says a run of a written recipe would do.
Each draft carries the comment that explains it; engine.starter.write turns drafts into recipe text. The metric
is chosen in engine.starter.metric_choice (MetricChoice and choose_metric are imported from here too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.contracts.registry import installed_stages
from ortflow.engine.ort.model_facts import BranchFact, ModelFacts
from ortflow.engine.starter.drafts import (
    PARTIAL_CANDIDATES,
    InputRefs,
    StageDraft,
    StageWith,
    Target,
)
from ortflow.engine.starter.float32_source import from_float32, wants_float32
from ortflow.engine.starter.head_choice import ReadingChoice
from ortflow.engine.starter.metric_choice import MetricChoice, choose_metric
from ortflow.engine.starter.quantized_already import quantized_stages, stored_int8_stages
from ortflow.engine.starter.roles import MATMUL_HEAVY, ModelKind, ModelRoles, article
from ortflow.engine.starter.shape_source import from_spec, wants_spec
from ortflow.engine.starter.timing import SMALL_WEIGHTS, benchmark_with


@dataclass
class Proposal:
    stages: list[StageDraft]
    candidates: list[str]  # model references select chooses among, the original first
    metric: MetricChoice
    # what accuracy is measured against: the original (a specialized candidate is fed its data less the frozen
    # inputs); a plugin's proposal may name another
    reference: str = "inputs.model"
    timing: StageWith = field(
        default_factory=lambda: benchmark_with(SMALL_WEIGHTS)
    )  # the benchmark's run settings


def network_in_branches(facts: ModelFacts) -> BranchFact | None:
    """The top-level If holding most of the model's weights, where one does: calibration and quantization see
    only the top-level graph, so the network inside is out of their reach."""
    if facts.branch_weight_share < 0.5 or not facts.branches:
        return None
    return max(facts.branches, key=lambda b: b.weights_inside)


def branch_note(facts: ModelFacts) -> list[str]:
    """What init says of a network inside an If: where it is, what decides it, and what would reach it."""
    branch = network_in_branches(facts)
    if branch is None:
        return []
    where = (
        f"The network sits inside an `If` ({branch.node}) on `{branch.condition}` (its then-branch when true, else-branch "
        f"otherwise): {branch.nodes_inside} of {facts.node_total} nodes and {facts.branch_weight_share:.0%} of the weights "
        "are in its branches, where calibration and quantization (which see the top-level graph) do not reach, so INT8 "
        "here changes little."
    )
    if not branch.deciding_inputs:
        return [where]
    inputs = ", ".join(f"`{i}`" for i in branch.deciding_inputs)
    return [
        where,
        f"Specializing on {inputs} (fixing it to the value your data carries, so the branch taken is folded into a "
        "plain graph) lets quantization reach the network: the `spec` stage below does it where the data is real "
        "(with random data, give real samples with --data).",
    ]


SANITY_NOTE = [
    "no `data:` input: on random feeds the sanity check would only report; with real samples",
    "(data: datasets.calibration) it refuses a model whose outputs collapsed",
]


# Without real data, dynamic INT8 of MatMul/Gemm is proposed from this share of the weights: below it (a
# classifier's last Gemm) it changes no timing and only adds a stage to every run.
MATMUL_SOME = 0.05

UNCALIBRATED_NOTE = [
    "NOT ELIGIBLE for `pick` while datasets.calibration holds random feeds: activation ranges fitted to noise",
    "can score well on noise and lose every detection on real inputs, so `pick` measures this model and says",
    "what it would give, but never chooses it; real samples there (or engine init --data PATH) make it eligible",
]


def _sanity(inputs: InputRefs, real_data: bool) -> InputRefs:
    """The quantize stages' `data` (their sanity check) only where the data is real."""
    return {**inputs, "data": "datasets.calibration"} if real_data else inputs


def _transformer_stages(real_data: bool) -> tuple[list[StageDraft], list[str]]:
    note = [] if real_data else SANITY_NOTE
    return [
        StageDraft(
            "fused",
            "transformer_fusion",
            {"model": "inputs.model"},
            {"model_type": "bert"},
            [
                "ORT's transformer fusions (Attention, SkipLayerNorm, Gelu); heads and hidden size are detected.",
                "Not a candidate itself: ORT's session applies the same fusions when it loads the original",
            ],
        ),
        StageDraft(
            "int8",
            "quantize_dynamic",
            _sanity({"model": "inputs.model"}, real_data),
            {"per_channel": True},
            [
                "dynamic INT8 of the MatMuls: no calibration needed; per-channel weight scales keep accuracy,",
                "and reduce_range: auto picks 7-bit weights on CPUs without VNNI, where 8-bit ones saturate",
                *note,
            ],
        ),
        StageDraft(
            "int8_fused",
            "quantize_dynamic",
            _sanity({"model": "fused.model"}, real_data),
            {"per_channel": True},
            [
                "the same on the fused graph (QAttention): faster on some CPUs, slower on others, so both are measured"
            ],
        ),
    ], ["inputs.model", "int8.model", "int8_fused.model"]


def _static_stages(roles: ModelRoles, real_data: bool) -> tuple[list[StageDraft], list[str]]:
    """Static INT8 from a calibration table, on the folded graph where the model has control flow; dynamic
    INT8 beside it where MatMul/Gemm hold most weights."""
    control_flow = roles.facts.has_ops("If", "Loop", "Scan")
    stages = [_folding_stage()] if control_flow else []
    source = "folded.model" if control_flow else "inputs.model"
    stages.append(_calibration_stage(source, control_flow))
    stages.append(_static_int8_stage(roles, source, real_data))
    # without real data the static model is never chosen (its ranges would fit noise), so dynamic INT8, which
    # needs no calibration, is the candidate wherever MatMul/Gemm hold a share of the weights worth timing
    weights = roles.facts.weight_share("MatMul", "Gemm")
    # an LSTM op has no static INT8 kernel (its QDQ stays float around it), only ORT's DynamicQuantizeLSTM
    recurrent = roles.facts.has_ops("LSTM")
    if weights >= MATMUL_HEAVY or (weights >= MATMUL_SOME and not real_data) or recurrent:
        stages.append(_dynamic_stage(roles, real_data))
        return stages, ["inputs.model", "int8.model", "int8_dynamic.model"]
    return stages, ["inputs.model", "int8.model"]


def _folding_stage() -> StageDraft:
    return StageDraft(
        "folded",
        "graph_optimization",
        {"model": "inputs.model"},
        {"level": "basic"},
        [
            "constant folding first: the model has If/Loop nodes, and ORT's quantization tools",
            "handle the folded graph better",
        ],
    )


def _calibration_stage(source: str, control_flow: bool) -> StageDraft:
    return StageDraft(
        "calib",
        "calibrate",
        {"model": source, "data": "datasets.calibration"},
        {},
        ["activation ranges (minmax) from the calibration data"]
        + (
            [
                "pre_process: auto (the default) goes on without ORT's pre-processing, and says so, where its",
                "shape inference cannot type If outputs",
            ]
            if control_flow
            else []
        ),
    )


def _static_int8_stage(roles: ModelRoles, source: str, real_data: bool) -> StageDraft:
    convs, matmuls = roles.facts.count("Conv", "ConvTranspose"), roles.facts.count("MatMul", "Gemm")
    settings, why = _static_settings(roles.kind, convs, matmuls)
    return StageDraft(
        "int8",
        "quantize_static",
        _sanity({"model": source, "calibration": "calib.table"}, real_data),
        settings,
        [
            f"static INT8 (QDQ) for {article(roles.kind.value)} ({convs} Conv, {matmuls} MatMul/Gemm), from the table;",
            *why,
            "avoid_traps (on by default) keeps in float what one 8-bit scale cannot serve",
            "(a detector's box-and-score Concat, LayerNorms and softmax exported as primitive ops)",
            *([] if real_data else SANITY_NOTE + UNCALIBRATED_NOTE),
        ],
    )


# op_types_to_quantize: auto (stages/quantization/op_table.py): INT8 only where it was measured faster.
AUTO_NOTE = [
    "op_types_to_quantize auto: the op types (and shapes) measured slower in INT8 than float on the target's",
    "kernel family stay float (stages/quantization/int8_op_table.json; a family without one: all quantized)",
]


def _static_settings(kind: ModelKind, convs: int, matmuls: int) -> tuple[StageWith, list[str]]:
    """quantize_static's parameters for the kind of model, and why: a streaming model quantizes only its
    weighted ops; convolutions take per-channel scales; Gemm-heavy models per-tensor ones."""
    if kind == ModelKind.STREAMING:
        return {
            "per_channel": True,
            "op_types_to_quantize": ["Conv", "MatMul", "Gemm"],
            "keep_float_first": 1,
        }, [
            "only the weighted ops, so the recurrent state's path stays float (a state that drifts spoils every",
            "later chunk), and the first one kept float: often a fixed front end (an STFT as a Conv) whose",
            "outputs one 8-bit scale serves badly",
        ]
    if convs >= matmuls:
        return {"per_channel": True, "op_types_to_quantize": "auto"}, [
            "per-channel weight scales: one per filter, as convolutions need",
            *AUTO_NOTE,
        ]
    return {"per_channel": False, "op_types_to_quantize": "auto"}, [
        "per-tensor scales: ORT's per-channel bias adjustment fails on [1, N] Gemm biases; if accuracy suffers,",
        "try op_types_to_quantize: [Gemm, MatMul] (the weighted ops only)",
        *AUTO_NOTE,
    ]


def _dynamic_stage(roles: ModelRoles, real_data: bool) -> StageDraft:
    """Dynamic INT8 beside static where MatMul/Gemm hold most weights (a ViT): activations quantized per call, no
    calibration, often faster and closer on attention blocks; select measures both."""
    share = roles.facts.weight_share("MatMul", "Gemm")
    lstm = roles.facts.count("LSTM")
    return StageDraft(
        "int8_dynamic",
        "quantize_dynamic",
        _sanity({"model": "inputs.model"}, real_data),
        {
            "per_channel": True,
            "op_types_to_quantize": ["MatMul", "Gemm", *(["LSTM"] if lstm else [])],
        },
        [
            f"dynamic INT8 of the MatMul/Gemm weights ({share:.0%} of the model's)"
            + (f" and of its {lstm} LSTM (ORT's DynamicQuantizeLSTM;" if lstm else ":"),
            *(["static INT8 has no LSTM kernel and leaves it float):"] if lstm else []),
            "no calibration, and activation scales taken per call; Conv stays float (ORT runs ConvInteger slowly",
            "on CPUs). A candidate beside the static one: `pick` measures which is faster and holds accuracy",
        ],
    )


def _branched_stages(roles: ModelRoles, real_data: bool) -> tuple[list[StageDraft], list[str]]:
    """A network inside an If: ORT's quantizers see the top-level graph only (and take the branches' Constant
    weights for activations). With real data, `specialize` freezes what decides the If to the value the data
    carries and folds the branch into a plain graph, which static INT8 reaches; without it (random data gives no
    value to freeze), the folded graph is the one candidate, so the recipe runs and measures."""
    branch = network_in_branches(roles.facts)
    if branch is None or not branch.deciding_inputs or not real_data:
        return [_folding_only()], ["inputs.model", "folded.model"]
    deciding = list(branch.deciding_inputs)
    spec = StageDraft(
        "spec",
        "specialize",
        {"model": "inputs.model", "data": "datasets.calibration"},
        {"freeze_from_data": [*deciding], "shapes_from_data": True},
        [
            f"specialize: {', '.join(deciding)} frozen to the value the data carries, the inputs fixed to its shapes,",
            "then the If and the shape arithmetic folded (onnxscript's optimizer), so INT8 reaches the network;",
            "checked equal to the original on the data, a candidate itself; the data made for the original feeds it",
            "(the frozen input's value checked, then left out)",
        ],
    )
    return [
        spec,
        _calibration_stage("spec.model", False),
        _static_int8_stage(roles, "spec.model", real_data),
    ], [
        "inputs.model",
        "spec.model",
        "int8.model",
    ]


def _folding_only() -> StageDraft:
    return StageDraft(
        "folded",
        "graph_optimization",
        {"model": "inputs.model"},
        {"level": "basic"},
        [
            "constant folding, the one candidate: no INT8 stage, because calibration and quantization see only",
            "the top-level graph and the network sits inside an If (see the top); real data (--data) would let",
            "a `specialize` stage freeze what decides it and fold the If away",
        ],
    )


DROPPED_NOTE = [
    "optional: a candidate that fails its sanity check on your data is dropped from the choice, not the end",
    "of the run (the run table says why; `pick` chooses among the rest)",
]


def _candidates_optional(stages: list[StageDraft], candidates: list[str]) -> None:
    """The quantize stages whose model `pick` chooses among: their sanity check refuses a broken model, and the
    engine drops a refused optional stage from the list inputs of accuracy, speed and pick."""
    for stage in stages:
        if stage.uses.startswith("quantize_") and f"{stage.name}.model" in candidates:
            stage.optional = True
            stage.comments += DROPPED_NOTE


def propose_stages(
    roles: ModelRoles,
    target: Target,
    real_data: bool,
    min_accuracy: float | None,
    reading: ReadingChoice | None = None,
    partial_candidates: int = PARTIAL_CANDIDATES,
    batch: int | None = None,
) -> Proposal:
    if target != Target.CPU:
        from ortflow.engine.starter.gpu_target import (
            gpu_stages,  # it builds on this module's drafts
        )

        stages, candidates = gpu_stages(roles, target)
    elif network_in_branches(roles.facts):
        stages, candidates = _branched_stages(roles, real_data)
    elif roles.facts.stored_int8_only and roles.kind == ModelKind.TRANSFORMER:
        stages, candidates = stored_int8_stages(roles.facts.integer_weights, real_data)
    elif roles.facts.already_quantized:
        stages, candidates = quantized_stages(roles.facts)
    elif roles.kind == ModelKind.TRANSFORMER:
        stages, candidates = _transformer_stages(real_data)
    else:
        stages, candidates = _static_stages(roles, real_data)
    if (
        target == Target.CPU
        and candidates[0] == "inputs.model"
        and wants_float32(roles.facts, "convert_float32" in installed_stages())
    ):
        from_float32(stages, candidates, roles.facts, real_data)
    elif (
        target == Target.CPU
        and real_data  # specialize checks its copy on the data, and takes free dims' sizes from it
        and not network_in_branches(roles.facts)
        and wants_spec(roles.facts, batch, "specialize" in installed_stages())
    ):
        from_spec(stages, candidates, roles.facts, batch)
    metric = choose_metric(roles, real_data, min_accuracy, reading)
    partial = _partial_stage(stages, metric, partial_candidates) if real_data else None
    if partial is not None and target == Target.CPU:
        stages.append(partial)
        candidates.append(f"{partial.name}.model")
    _candidates_optional(stages, candidates)
    return Proposal(
        stages, candidates, metric, candidates[0], benchmark_with(roles.facts.weight_total)
    )


def _partial_stage(
    stages: list[StageDraft], metric: MetricChoice, budget: int
) -> StageDraft | None:
    """Partial INT8 beside the whole-model `int8` stage, with its settings and the recipe's metric: where whole-model
    INT8 misses the metric on the held-out data, quantize_partial keeps float the nodes where the error enters.
    Real data only: on random feeds a metric says nothing, and neither would the nodes it blamed."""
    int8 = next((s for s in stages if s.name == "int8" and s.uses.startswith("quantize_")), None)
    if budget < 1 or int8 is None or int8.uses not in ("quantize_static", "quantize_dynamic"):
        return None
    inputs: InputRefs = {"model": int8.inputs["model"], "data": "datasets.held_out"}
    if "calibration" in int8.inputs:
        inputs["calibration"] = int8.inputs["calibration"]
    if (
        "data" in int8.inputs
    ):  # each candidate's sanity check on the samples `int8`'s own check used
        inputs["sanity_data"] = int8.inputs["data"]
    # the samples the `accuracy` stage checks, so both judge the same data (a step's labels are in its key: the
    # two never serve each other a check named for the other)
    accuracy: StageWith = {
        **metric.validate,
        "min": {metric.name: metric.threshold},
    }
    return StageDraft(
        "int8_partial",
        "quantize_partial",
        inputs,
        {"quantize": int8.params.copy(), "accuracy": accuracy, "max_candidates": budget},
        [
            f"partial INT8: where `int8` misses {metric.name} >= {metric.threshold} on the held-out data, the nodes",
            "where its error enters (SQNR drop, quantization_debug) stay float, fewest first, until the metric holds;",
            f"at most {budget} models built (engine init/optimize --partial-candidates N; 0 leaves this stage out).",
            "Its summary names what stayed float and why; `pick` times it against the rest",
        ],
        optional=True,
    )
