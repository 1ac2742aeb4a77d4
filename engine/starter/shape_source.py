"""Shape arithmetic folded before anything else (the `spec` stage, specialize): a small model spends much of its run
on per-node overhead, and the nodes that compute on its input shapes (Shape, Size, the Ifs they decide) run on every
call, because ORT's own folding leaves a Shape of a symbolic dim alone. onnxscript's optimizer folds what the ranks
and fixed dims already decide; with `--batch 1` (the deployment calls the model one sample at a time, as streaming
audio models are called) the batch dim is fixed at 1 too, and what it decides folds as well.

Measured on the corpus (2-core AMX Xeon, interleaved rounds against a byte-copy control): silero-vad's op15 and
"half" files 325-350 -> 39-42 nodes, about 1.2x in float32, and op15's INT8 from the folded copy 1.32x where it was
1.11x; openWakeWord's hey_mycroft 37 -> 20 nodes, its LSTMs' zero initial states (built from the batch dim on
every call) left out as ONNX's default, with the batch left free. The copy is a candidate and the source of every
INT8 one; it is checked equal to the original on the data, so the original stays the reference accuracy is
measured against. A model of SMALL_WEIGHTS or more is left alone unless the batch is fixed: its run time is its
arithmetic, and the fold would change nothing measurable."""

from __future__ import annotations

from pathlib import Path

from ortflow.engine.ort.model_facts import ModelFacts, TensorFact
from ortflow.engine.starter.drafts import InputRefs, StageDraft
from ortflow.engine.starter.timing import SMALL_WEIGHTS

SPEC = "spec"
SHAPE_OPS = ("Shape", "Size", "If")  # what computes on the input shapes, or branches on them


def batch_dims(inputs: tuple[TensorFact, ...]) -> dict[str, int] | None:
    """{name: 1} for the named dim on each input's batch axis (its first symbolic one), or None where an input's
    batch axis has no name to fix it by (or no input has one)."""
    names: dict[str, int] = {}
    for tensor in inputs:
        axes = tensor.symbolic_axes()
        if not axes:
            continue
        dim = tensor.shape[axes[0]]
        if not isinstance(dim, str) or not dim:
            return None
        names[dim] = 1
    return names or None


def wants_spec(facts: ModelFacts, batch: int | None, stage_installed: bool) -> bool:
    """Whether init folds the shape arithmetic first: with --batch 1, wherever the batch dim can be fixed; a model
    of any size with HardSwish written as Clip chains; a small model that computes on its input shapes. Never for
    a model quantized already (its recipe runs the graph optimizer alone)."""
    if not stage_installed or facts.already_quantized:
        return False
    if batch is not None and batch_dims(facts.inputs) is not None:
        return True
    # HardSwish written as Clip chains (four nodes each, breaking ORT's NCHWc layout) or a Conv's scalar Mul and
    # Add (two passes over its output): at any size
    return facts.hard_chains + facts.conv_scalings > 0 or (
        facts.weight_total < SMALL_WEIGHTS and facts.count(*SHAPE_OPS) > 0
    )


def from_spec(
    stages: list[StageDraft], candidates: list[str], facts: ModelFacts, batch: int | None
) -> None:
    """Put the spec stage first, every stage that read the original read its folded copy, and the copy in the
    candidates after the original (which stays the reference). Real data only: the copy is checked equal to the
    original on it."""
    for stage in stages:
        if stage.inputs.get("model") == "inputs.model":
            stage.inputs["model"] = f"{SPEC}.model"
    stages.insert(0, _spec_stage(facts, batch))
    candidates.insert(1, f"{SPEC}.model")


def _spec_stage(facts: ModelFacts, batch: int | None) -> StageDraft:
    inputs: InputRefs = {"model": "inputs.model", "data": "datasets.calibration"}
    dims = batch_dims(facts.inputs) if batch is not None else None
    shape_ops = facts.count(*SHAPE_OPS)
    what = (
        f"the batch dim ({', '.join(dims)}) fixed at 1 (--batch 1: one sample a call), then the shape arithmetic"
        if dims
        else f"the shape arithmetic ({shape_ops} Shape/Size/If nodes, {facts.hard_chains} HardSwish Clip chains, "
        f"{facts.conv_scalings} Conv scalings)"
    )
    return StageDraft(
        SPEC,
        "specialize",
        inputs,
        {"dims": dims} if dims else {},
        [
            f"{what} folded (onnxscript's optimizer; zero recurrent states, HardSwish Clip chains and Conv scalings",
            "too): ORT runs those nodes on every call, a real share of a small model's time. A candidate, and the",
            "source of every INT8 one; checked equal to the original on your data",
            *(
                ["it takes batch 1 only: leave out --batch 1 (or this stage) if you batch calls"]
                if dims
                else []
            ),
        ],
    )


def batch_note(stages: list[StageDraft], delivered: Path, chosen_original: bool) -> str | None:
    """What optimize says of a delivered model whose input shapes the recipe fixed: with --batch 1, it takes
    batch 1 only; where the spec stage took every input's shape from the data (a network inside an If), it takes
    those shapes only."""
    spec = next((s for s in stages if s.name == SPEC), None)
    if chosen_original or spec is None:
        return None
    dims = spec.params.get("dims")
    if dims:
        return (
            f"{delivered} takes batch 1 only: --batch 1 fixed its batch dim ({', '.join(dims)}) at 1; "
            "run `engine optimize` without --batch for a model that takes any batch"
        )
    if spec.params.get("shapes_from_data"):
        return (
            f"{delivered} takes the data's input shapes only: the `{SPEC}` stage fixed each input's shape to "
            "the samples'; for other shapes set its `shapes_from_data: false` in the recipe and run it"
        )
    return None
