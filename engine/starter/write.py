"""`engine init`: inspect a model and write a commented recipe that runs as written. The recipe is text from a
template, so every choice keeps the comment that explains it; the engine's own validation checks it."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ortflow
from ortflow.engine.leaves.detection_heads import feed_image_size
from ortflow.engine.leaves.errors import OrtflowError, StageError
from ortflow.engine.ort.model_facts import read_model_facts
from ortflow.engine.starter.data import (
    DataKind,
    DatasetChoice,
    flow,
    package_file,
    random_choice,
    relative,
    user_choice,
)
from ortflow.engine.starter.drafts import PARTIAL_CANDIDATES, StageDraft, StageWith, Target
from ortflow.engine.starter.gpu_target import attention_note, timing_params
from ortflow.engine.starter.head_choice import (
    FOLDER_FIX,
    NPZ_FIX,
    SAMPLES,
    ReadingChoice,
    choose_reading,
)
from ortflow.engine.starter.metric_choice import MetricChoice
from ortflow.engine.starter.preprocess import Preprocessing
from ortflow.engine.starter.proposal import Proposal, branch_note, propose_stages
from ortflow.engine.starter.roles import (
    InputRole,
    ModelKind,
    ModelRoles,
    OutputMeaning,
    article,
    read_roles,
)
from ortflow.engine.starter.trial import Trial, seen_running

VALIDATION_SAMPLES = 16


@dataclass(frozen=True)
class InitOptions:
    model: Path
    output: Path
    target: Target = Target.CPU
    data: Path | None = None
    tokenizer: Path | None = None
    min_accuracy: float | None = None
    partial_candidates: int = (
        PARTIAL_CANDIDATES  # the partial-INT8 search's budget (real data only); 0: none
    )
    batch: int | None = None  # --batch 1: the deployment calls the model one sample at a time
    force: bool = False
    name: str | None = None  # the recipe's name (its out/<name>/ folder); default <model>-<target>
    preprocessing: Preprocessing | None = (
        None  # image pixels' mean/std as the user gave them (--preprocess, --mean/--std)
    )


@dataclass(frozen=True)
class InitResult:
    recipe: Path
    roles: ModelRoles
    proposal: Proposal
    data: DatasetChoice


def _comment(lines: list[str], indent: str) -> list[str]:
    return [f"{indent}# {line}" if line else f"{indent}#" for line in lines]


def _output_line(info: Any, produced: dict[str, list[int]]) -> str:
    """An output as declared, with the shape it had on the first sample where that differs."""
    shape = produced.get(info.fact.name)
    seen = f" (on the data: {shape})" if shape and shape != list(info.fact.shape) else ""
    return f"  {info.fact.describe()}{seen}: {info.meaning.value}" + (
        f" ({info.why})" if info.why else ""
    )


def _header(
    roles: ModelRoles, proposal: Proposal, target: Target, produced: dict[str, list[int]]
) -> list[str]:
    facts = roles.facts
    size = f"{facts.size_bytes / 1e6:.1f} MB" + (
        f", weights in {len(facts.external_data)} external-data file(s)"
        if facts.external_data
        else ""
    )
    lines = [
        f"Written by `engine init` (ortflow {ortflow.__version__}) for {facts.path.name}, for the {target.value} target.",
        f"What the model looks like: {article(roles.kind.value)}{', quantized already' if facts.already_quantized else ''}; "
        f"{size}; opset {facts.opset}; ops: {facts.top_ops()}.",
        *_wrapped(
            [
                f"Classified as {article(roles.kind.value)} because {roles.why}.",
                *branch_note(facts),
                *attention_note(facts),
            ]
        ),
        "Inputs:",
    ]
    lines += [
        f"  {i.fact.describe()}: {i.role.value}"
        + (f", batch on axis {i.batch_axis}" if i.batch_axis not in (0, None) else "")
        for i in roles.inputs
    ]
    lines += ["Outputs:"] + [_output_line(o, produced) for o in roles.outputs]
    lines += [
        "Each choice below is a guess from these facts and says why in a comment: correct what does not fit,",
        "then `engine run` this file. It builds candidates, checks each against the float model, times them all",
        f"side by side, and `pick` chooses the fastest whose {proposal.metric.name} is at least {proposal.metric.threshold}.",
    ]
    return _comment(lines, "")


def _wrapped(paragraphs: list[str]) -> list[str]:
    """Long remarks as comment lines of readable width."""
    return [
        line
        for text in paragraphs
        for line in textwrap.wrap(text, width=112, break_on_hyphens=False)
    ]


def _dataset_lines(choice: DatasetChoice) -> list[str]:
    if choice.kind == DataKind.RANDOM:
        notes = [
            "No data was given (engine init --data PATH), so these are seeded random feeds shaped from the inputs:",
            "good for timing; calibration and accuracy on noise say little. Replace them with real samples:",
            "{loader: images, with: {path: FOLDER}}, {loader: text, with: {path: FILE.txt, tokenizer: tokenizer.json}},",
            "{loader: npz, with: {path: FILE.npz}} (see `engine stages LOADER`).",
        ] + choice.comments
        held = ["held out: the same shapes, another seed"]
    else:
        notes = choice.comments
        held = choice.held_out_comments
    return (
        _comment(notes, "  ")
        + [f"  calibration: {flow({'loader': choice.loader, 'with': choice.params})}"]
        + _comment(held, "  ")
        + [f"  held_out: {flow({'loader': choice.loader, 'with': choice.held_out_params})}"]
    )


def _stage_lines(stage: StageDraft) -> list[str]:
    lines = _comment(stage.comments, "  ") + [
        f"  {stage.name}:",
        f"    uses: {stage.uses}",
        f"    in: {flow(stage.inputs)}",
    ]
    if stage.params:
        lines.append(f"    with: {flow(stage.params)}")
    if stage.optional:
        lines.append("    optional: true")
    return lines


# per target, the benchmark's `providers` (none on the CPU: ORT's default)
PROVIDERS: dict[Target, StageWith] = {
    Target.CPU: {},
    Target.CUDA: {"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
    Target.TENSORRT: {
        "providers": [
            {"name": "TensorrtExecutionProvider", "options": {"trt_fp16_enable": True}},
            "CUDAExecutionProvider",
            "CPUExecutionProvider",
        ]
    },
}


def _speed(models: list[str], target: Target, timing: StageWith) -> StageDraft:
    return StageDraft(
        "speed",
        "benchmark",
        {"models": models, "data": "datasets.held_out"},
        {**timing, **PROVIDERS[target]},
        [
            "every candidate and the original, interleaved in rounds on the same feeds (batch 1); raise runs",
            "(or seconds) and rounds for steadier numbers, add batch_size: [1, 8] or intra_op_threads: [1, 2] to sweep",
            *(
                [
                    "a model this small is timed for a budget (seconds), not a run count: thousands of runs a round"
                ]
                if "seconds" in timing
                else []
            ),
        ],
        optional=target != Target.CPU,
    )


def evaluation_stages(proposal: Proposal, target: Target) -> list[StageDraft]:
    """Accuracy, speed and the choice, over the proposal's candidates."""
    if target == Target.TENSORRT:  # validate_accuracy runs on the CPU, which cannot load an engine
        speed = _speed(["trt_fp16.context_model"], target, proposal.timing)
        speed.comments += [
            "TensorRT: the engine's accuracy is not checked here (validate_accuracy runs on the CPU);",
            "the fp16 engine is timed against nothing else: add a CUDA benchmark of inputs.model to compare",
        ]
        return [speed]
    metric: MetricChoice = proposal.metric
    accuracy = StageDraft(
        "accuracy",
        "validate_accuracy",
        {
            "reference": proposal.reference,
            "candidates": [c for c in proposal.candidates if c != proposal.reference],
            "data": "datasets.held_out",
        },
        {"samples": VALIDATION_SAMPLES, **metric.validate},
        metric.comments
        + ["no gate here: `pick` applies the constraint, so one miss does not stop the run"],
    )
    pick = StageDraft(
        "pick",
        "select",
        {
            "models": proposal.candidates,
            "benchmark": "speed.results",
            "accuracy": "accuracy.results",
        },
        {"minimize": "p50_ms", "min": {metric.name: metric.threshold}},
        [
            "the fastest model whose accuracy holds; the original (fp32) is a candidate, so the",
            "answer is honest when no optimized model qualifies (selection.json says why)",
        ],
        optional=target != Target.CPU,
    )
    speed = _speed(proposal.candidates, target, proposal.timing)
    speed.params.update(timing_params(proposal.candidates))
    return [accuracy, speed, pick]


def render(
    roles: ModelRoles,
    proposal: Proposal,
    data: DatasetChoice,
    model_ref: str,
    name: str,
    target: Target,
) -> str:
    lines = _header(roles, proposal, target, data.produced) + ["version: 1", f"name: {name}"]
    if target == Target.CPU:
        lines += [
            "# INT8 choices (7-bit weights or not) follow the CPU this runs on; set e.g. {cpu: avx512_vnni} to build",
            "# for another",
            "target: {cpu: native}",
        ]
    lines += ["inputs:", f"  model: {model_ref}", "datasets:"] + _dataset_lines(data) + ["stages:"]
    for stage in proposal.stages + evaluation_stages(proposal, target):
        lines += _stage_lines(stage)
    lines += _comment(
        [
            "Grow it: `quantize_search` finds the fastest quantized model for a target accuracy by itself",
            '(see docs/quantization.md, "Accuracy-aware quantization"); a `matrix:` sweeps settings; `engine plan` shows',
            _families(roles, proposal),
        ],
        "",
    )
    return "\n".join(lines) + "\n"


def _families(roles: ModelRoles, proposal: Proposal) -> str:
    if roles.kind == ModelKind.TRANSFORMER:
        return (
            "what a run would do; static INT8 with a `calibrate` stage is the other family to try."
        )
    if "int8_dynamic.model" in proposal.candidates:
        why = (
            "it has an LSTM"
            if roles.facts.has_ops("LSTM")
            else "MatMul/Gemm hold most of the weights"
        )
        return f"what a run would do. Static and dynamic INT8 are both candidates: {why}."
    return "what a run would do. Dynamic INT8 is left out for convolutions: ORT runs ConvInteger slowly on CPUs."


def recipe_name(model: Path, target: Target) -> str:
    base = (
        model.stem
        if model.stem.lower() not in ("model", "model_optimized", "model_quantized")
        else model.parent.name
    )
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-.") or "model"
    return f"{stem}-{target.value}"


def _dataset(roles: ModelRoles, options: InitOptions, folder: Path) -> DatasetChoice:
    """The datasets section's choice, once the float model has run on its first feed (engine.starter.trial)."""
    if options.preprocessing is not None and not roles.inputs_with(InputRole.IMAGE):
        raise OrtflowError(
            f"{options.model}: --preprocess/--mean/--std set how image pixels are scaled, and the model has "
            f"no image input ({', '.join(i.fact.describe() for i in roles.inputs)}) — leave them out"
        )
    if options.data:
        choice = user_choice(
            roles, Path(options.data), folder, options.tokenizer, options.preprocessing
        )
    else:
        choice = random_choice(roles, None, options.preprocessing)
    return seen_running(
        roles, choice, folder, lambda sizes: random_choice(roles, sizes, options.preprocessing)
    )


def _head_reading(roles: ModelRoles, data: DatasetChoice, folder: Path) -> ReadingChoice | None:
    """On real images, how a detection head is read: chosen by plausibility (engine.starter.head_choice). Images
    in an .npz (pixels prepared as the model's own front end does) are real images too: without a reading, the
    metric read the head in the default layout unchecked, and a misread head failed the run's accuracy stage."""
    heads = roles.outputs_with(OutputMeaning.DETECTIONS)
    if not heads or data.kind not in (DataKind.IMAGES, DataKind.NPZ):
        return None
    trial = Trial(roles.facts.path, folder)
    feeds = trial.feeds(data, SAMPLES)
    if not feeds or feed_image_size(feeds[0]) is None:
        return None  # an .npz without an image input: nothing to place boxes in
    fix = NPZ_FIX if data.kind == DataKind.NPZ else FOLDER_FIX
    return choose_reading(roles.facts.path.name, heads[0].fact.name, feeds, trial.session, fix)


def init_recipe(options: InitOptions) -> InitResult:
    """Inspect `options.model` and write the recipe to `options.output` (refused over a file unless `force`)."""
    model, output = Path(options.model), Path(options.output)
    if not model.is_file():
        raise OrtflowError(f"{model}: no such model file — give the path of an .onnx file")
    if output.exists() and not options.force:
        raise OrtflowError(f"{output} exists — pass --force to overwrite it, or -o another path")
    try:
        roles = read_roles(read_model_facts(model))
    except (
        StageError
    ) as exc:  # not an ONNX model, external data outside its folder: said as a usage error
        raise OrtflowError(f"{model}: {exc}") from exc
    if not roles.inputs:
        raise OrtflowError(
            f"{model}: the model has no inputs to feed — nothing to calibrate or time"
        )
    folder = output.resolve().parent
    data = _dataset(roles, options, folder)
    if options.batch is not None and data.kind == DataKind.RANDOM:
        raise OrtflowError(
            f"{model}: --batch {options.batch} needs real samples: give them with --data (the copy with its batch dim "
            "fixed is checked equal to the original on them)"
        )
    proposal = propose_stages(
        roles,
        options.target,
        data.kind != DataKind.RANDOM,
        options.min_accuracy,
        _head_reading(roles, data, folder),
        options.partial_candidates,
        options.batch,
    )
    model_ref = flow(
        package_file(model) or relative(model, folder)
    )  # a wheel's file by package: the recipe travels
    text = render(
        roles,
        proposal,
        data,
        model_ref,
        options.name or recipe_name(model, options.target),
        options.target,
    )
    folder.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    return InitResult(output, roles, proposal, data)
