"""`engine optimize MODEL -o OUT.onnx`: `engine init` to a recipe that is kept, a run of it, and the model its
`pick` stage chose copied to OUT. What the run chose (or why nothing qualified) is read from the outputs the
pick stage's type declares for its choice (Stage.declares.choice: select's `selection` document and `model`),
so the answer is the recipe's own, and a second call is served from the cache. init names the stage types it
writes; the results are found through their declarations, never by file name."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ortflow.engine.contracts import documents
from ortflow.engine.contracts.documents import Selection, SelectionCandidate, SessionSettings
from ortflow.engine.contracts.provenance import REUSED, UNVERIFIED_RANDOM, DataSource
from ortflow.engine.contracts.stage import Stage
from ortflow.engine.contracts.types import StageOutcome
from ortflow.engine.leaves.errors import (
    EXIT_GATE_FAILED,
    EXIT_STAGE_FAILED,
    EXIT_UNVERIFIED,
    OrtflowError,
)
from ortflow.engine.publish.report import stage_folder
from ortflow.engine.starter.write import InitOptions, InitResult, init_recipe

PICK = "pick"  # the select stage engine init writes


def default_recipe_path(output: Path) -> Path:
    return output.with_name(output.name.removesuffix(".onnx") + ".recipe.yaml")


def prepare(options: InitOptions) -> InitResult:
    """Write the recipe; one already there is kept when it is exactly what init writes (a repeated call), and
    refused otherwise (edited by hand: run it with `engine run`) unless `force`."""
    recipe = Path(options.output)
    if not recipe.exists() or options.force:
        return init_recipe(options)
    before = recipe.read_bytes()
    scratch = recipe.with_name(f".{recipe.name}.new")
    try:
        result = init_recipe(InitOptions(**{**options.__dict__, "output": scratch, "force": True}))
        if scratch.read_bytes() != before:
            raise OrtflowError(
                f"{recipe} exists and differs from what `engine init` writes for these arguments (edited?) — "
                f"run it with `engine run {recipe}`, pass --save-recipe ANOTHER.yaml, or --force to overwrite it"
            )
    finally:
        scratch.unlink(missing_ok=True)
    return InitResult(recipe, result.roles, result.proposal, result.data)


class NothingQualified(OrtflowError):
    exit_code = EXIT_GATE_FAILED


class Unverified(OrtflowError):
    """`--require-real-data`, and the accuracy behind the choice was not measured on real data."""

    exit_code = EXIT_UNVERIFIED


def real_data_hint(model: Path, output: Path) -> str:
    """The one command that checks the choice on the user's own samples."""
    return f"check it on real data: engine optimize {model} -o {output} --data PATH (a folder of images, a .txt/.jsonl or an .npz)"


def data_note(
    source: DataSource | None, model: Path, output: Path, left_out: tuple[str, ...] = ()
) -> str | None:
    """optimize's closing line when the accuracy behind its choice was not measured on real data (or on the data
    calibration used), else None. `left_out`: the static INT8 candidates `pick` would not deliver because their
    activation ranges came from random or unknown data: what real samples could add, and the command."""
    if source is not None and source.verified:
        if source.calibration_reused:
            return (
                f"{REUSED}: the accuracy check ran on the samples calibration saw, which flatters the model — edit "
                "the recipe's held_out dataset to samples calibration did not see and `engine run` it"
            )
        return None
    said = source.label() if source is not None else UNVERIFIED_RANDOM
    static = (
        f"; static INT8 ({'; '.join(left_out)}) was not delivered, because its activation ranges were "
        "calibrated on random feeds, which fit noise, not your inputs: calibrated on your samples it may be "
        "delivered"
        if left_out
        else ""
    )
    return (
        f"{said}: the accuracy above says nothing about the model's real inputs{static} — "
        + real_data_hint(model, output)
    )


def require_real(choice: Choice | None, model: Path, output: Path) -> None:
    """Refuse (exit 6) a choice whose accuracy rests on anything but real data; `choice` None: no --data given,
    refused before anything runs."""
    source = choice.data if choice is not None else None
    if choice is not None and source is not None and source.verified:
        return
    said = source.label() if source is not None else "random feeds (no --data)"
    raise Unverified(
        f"--require-real-data: the accuracy check would rest on {said}, so nothing is copied to {output} — "
        + real_data_hint(model, output)
    )


class NothingChosen(OrtflowError):
    """The recipe ran, but its `pick` stage did not (skipped: a GPU target without a GPU)."""

    exit_code = EXIT_STAGE_FAILED


@dataclass(frozen=True)
class Choice:
    chosen: str
    model: Path
    speedup: float
    p50_ms: float
    baseline_ms: float
    metric: str
    value: float
    threshold: float
    data: DataSource | None = None  # what the accuracy behind the choice was measured on
    others: tuple[
        str, ...
    ] = ()  # every other candidate's speed and accuracy, e.g. "'int8' 0.92x, cosine_mean 0.9181"
    original: str = (
        "model"  # the original's candidate: `model`, or its specialized copy standing for it
    )
    session: SessionSettings | None = (
        None  # the session its speed was timed with: what reproduces it
    )
    # the candidates pick refused because their activation ranges came from random or unknown data, each with
    # its measured speed, e.g. "'int8' 1.93x": what calibration on real samples could add
    left_out: tuple[str, ...] = ()


def _measured(candidate: SelectionCandidate, metric: str, threshold: float) -> str:
    """A candidate as the closing line names it: its speed and its accuracy against the constraint."""
    value = _candidate_metric(candidate, metric)
    low, high = candidate.values.get("speedup_low"), candidate.values.get("speedup_high")
    spread = f" ({low:.2f}-{high:.2f}x over rounds)" if low is not None and high is not None else ""
    verdict = (
        ""
        if candidate.meets_constraints
        else f" < {threshold}"
        if value < threshold
        else " (not faster in every round: noise)"
        if low is not None and low <= 1.0
        else " (missed a constraint)"
    )
    speed = f"{candidate.values.get('speedup', 0):.2f}x{spread}"
    return f"'{candidate.id}' {speed}, {metric} {value:.4f}{verdict}"


def _faster(candidate: SelectionCandidate, original: SelectionCandidate) -> bool:
    """Faster than the original as pick judges it: in every round of the benchmark (speedup_low above 1,
    select's rule), or by the median where the document has no rounds (written before they were kept)."""
    if candidate is original:
        return False
    low = candidate.values.get("speedup_low")
    if low is not None:
        return float(low) > 1.0
    return float(candidate.values["p50_ms"]) < float(original.values["p50_ms"])


def _candidate_metric(candidate: SelectionCandidate, metric: str) -> float:
    return float(candidate.values.get(metric, float("nan")))


@dataclass(frozen=True)
class ChoiceFiles:
    """Where a choosing stage published its answer: the document saying why, and the chosen model."""

    document: Path
    model: Path


def choice_files(stage_cls: type[Stage], outcome: StageOutcome, out_dir: Path) -> ChoiceFiles:
    """The files of `outcome`'s declared choice (Stage.declares.choice), as its run published them."""
    declared = stage_cls.declares.choice
    if declared is None:
        raise OrtflowError(
            f"stage '{outcome.name}' ({stage_cls.type}) declares no choice, so there is no chosen model to "
            "copy — give the stage type `declares = Declares(choice=Choice(model=..., document=...))`"
        )
    published = outcome.record.outputs if outcome.record is not None else {}

    def path(port: str) -> Path:
        spec = stage_cls.output_port(port)
        filename = (
            published[port].filename
            if port in published
            else (spec.filename if spec and spec.filename else port)
        )
        return stage_folder(out_dir, outcome.name) / filename

    return ChoiceFiles(path(declared.document), path(declared.model))


def read_choice(files: ChoiceFiles, metric: str, threshold: float) -> Choice:
    """What `pick` chose. NothingQualified when models faster than the original were built but none met the
    constraint, saying by how much the closest missed; the original itself when nothing was faster."""
    selection = documents.read(files.document, Selection)
    candidates = selection.candidates
    # the original: inputs.model, or the first candidate (a specialized copy standing for it)
    original = next((c for c in candidates if c.model == "model"), candidates[0])
    # refused for where their ranges came from, not for accuracy: never a reason to exit 3
    uncalibrated = [c for c in candidates if uncalibrated_ranges(c)]
    faster = [c for c in candidates if _faster(c, original) and c not in uncalibrated]
    data = selection.data
    on = f" ({data.label()})" if data is not None else ""
    if faster and not any(c.meets_constraints for c in faster):
        closest = max(faster, key=lambda c: _candidate_metric(c, metric))
        value = _candidate_metric(closest, metric)
        fix = (
            "lower --min-accuracy"
            if data is not None and data.verified
            else "lower --min-accuracy, or give real data with --data"
        )
        raise NothingQualified(
            f"no model faster than the original met {metric} >= {threshold}: the closest, '{closest.id}' "
            f"({closest.values.get('speedup', 0):.2f}x), scored {value:.4f}, {threshold - value:.4f} short{on} — "
            f"{fix} (every candidate: {files.document})"
        )
    chosen = selection.chosen_candidate()
    assert chosen is not None  # select fails its gate (exit 3) when it chooses none
    others = tuple(
        _measured(c, metric, threshold)
        for c in candidates
        if c is not chosen and c is not original and c not in uncalibrated
    )
    left_out = tuple(
        f"'{c.id}' {c.values.get('speedup', 0):.2f}x on these feeds" for c in uncalibrated
    )
    return Choice(
        chosen.id,
        files.model,
        float(chosen.values.get("speedup", 1.0)),
        float(chosen.values["p50_ms"]),
        float(original.values["p50_ms"]),
        metric,
        _candidate_metric(chosen, metric),
        threshold,
        data,
        others,
        original.id,
        chosen.session,
        left_out,
    )


def uncalibrated_ranges(candidate: SelectionCandidate) -> bool:
    """Whether pick refused the candidate for the data its activation ranges came from (random or unknown)."""
    source = candidate.calibrated_on
    return source is not None and not source.verified


def refusals(outcomes: Mapping[str, StageOutcome]) -> list[str]:
    """The candidates the run dropped from `pick` (optional stages that refused their model), each with the
    refusal the run recorded: its cause and the change that fixes it."""
    return [
        f"'{o.name}': {o.error}"
        for o in outcomes.values()
        if o.tolerated and PICK in o.dropped_from
    ]


def closing_line(choice: Choice, output: Path, refused: list[str]) -> str:
    """optimize's verdict: the model delivered; where it is the original, each other candidate's speed and score,
    and each candidate refused before the choice, with why."""
    on = f" ({choice.data.label()})" if choice.data is not None else ""
    dropped = f"refused, so dropped from the choice: {'; '.join(refused)}" if refused else ""
    original = "the original model" + (
        f" (specialized: '{choice.original}')" if choice.original != "model" else ""
    )
    if choice.chosen != choice.original:
        # the session that reproduces the speed sits with the speed; the data the verdict rests on closes it
        timed = f"; timed with {choice.session.describe()}" if choice.session is not None else ""
        return (
            f"{output}: '{choice.chosen}', {choice.speedup:.2f}x the original's speed (p50 {choice.p50_ms:.3g} ms "
            f"against {choice.baseline_ms:.3g} ms{timed}), {choice.metric} {choice.value:.4f} >= "
            f"{choice.threshold}{on}" + (f"; {dropped}" if dropped else "")
        )
    measured = f": {'; '.join(choice.others)}" if choice.others else ""
    if not refused and choice.left_out:  # its session already runs ORT's graph optimizations
        return (
            f"{output}: {original} (ORT optimizes and fuses its graph as it loads it) — no candidate that "
            f"needs no calibration was faster{measured}{on}"
        )
    if not refused:
        return f"{output}: {original} — no optimized candidate was faster{measured}{on}"
    slower = f"no other candidate was faster{measured}; " if choice.others else ""
    return f"{output}: {original}{on} — {slower}{dropped}"


def deliver(choice: Choice, output: Path) -> None:
    """Copy the chosen model to `output`, atomically: OUT never holds half a model."""
    if not choice.model.is_file():
        raise OrtflowError(
            f"{choice.model.parent}: the chosen model keeps its weights in external data files — "
            "copy that folder as a whole"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    shutil.copyfile(choice.model, partial)
    partial.chmod(0o644)
    partial.replace(output)
