"""The check every quantize stage runs before calling its model a success: the quantized model's outputs,
next to the float model's on a few samples, must not have collapsed (NaN, all zeros, constant, or far off).

Whole-output agreement hides the worst failures: a detector whose output joins box coordinates (0..640)
with class scores (0..1) keeps a cosine of 0.99 when every class score is rounded to 0. So each output is
also looked at channel by channel (axis 1, and the last axis), and a channel that varies in float but is
constant after quantization counts as collapsed. A detector's class scores are also judged as a group of
their own (output_groups): their cosine and the confident scores they keep."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.api import JsonObject
from ortflow.stages.quantization import output_groups
from ortflow.stages.quantization.sanity_metrics import SanityChoice, SanityMetrics, output_numbers

if TYPE_CHECKING:
    from ortflow.api import Feed, StageContext

SANITY_PARAMS: JsonObject = {
    "sanity_check": {
        "type": "boolean",
        "default": True,
        "description": "compare outputs with the float model on a few samples (the `data` input, else the "
        "data the calibration table was made from, else random feeds) and fail when one collapsed: NaN, "
        "all zeros, constant, far off, or a detector's class scores beside good boxes",
    },
    "sanity_samples": {
        "type": "integer",
        "minimum": 1,
        "default": 8,
        "description": "samples the check runs",
    },
    "sanity_min_cosine": {
        "type": "number",
        "minimum": -1,
        "maximum": 1,
        "default": 0.5,
        "description": "the loose agreement every output must keep (mean cosine per sample)",
    },
}
COLLAPSE = 1e-3  # a channel whose spread fell below this share of its float spread has collapsed
LOST = 0.9  # a channel whose error is this large a share of its values has lost its signal
DEAD_SHARE = 0.05  # constant channels count when at least this share of an axis is constant
MIN_DECISIONS = 0.5  # a probability output must keep at least this share of the float model's non-default choices
LOST_SHARE = 0.2  # channels that lost their signal count when at least this share of an axis did
SYMBOLIC_SIZE = (
    64  # random feeds: the size of an unnamed symbolic axis (a 16-pixel image breaks detectors)
)


@dataclass
class OutputCheck:
    name: str
    cosine: float
    relative_error: float
    problems: list[str] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)  # what the samples could not show


@dataclass
class SanityReport:
    samples: int
    synthetic: bool  # random feeds, not the user's data
    outputs: list[OutputCheck]

    @property
    def failures(self) -> list[str]:
        return [f"output '{o.name}': {p}" for o in self.outputs for p in o.problems]

    @property
    def blind_spots(self) -> list[str]:
        return [f"output '{o.name}': {p}" for o in self.outputs for p in o.unjudged]

    def metrics(self) -> SanityMetrics:
        return {
            "samples": self.samples,
            "synthetic_inputs": self.synthetic,
            "outputs": {
                o.name: output_numbers(o.cosine, o.relative_error, o.problems, o.unjudged)
                for o in self.outputs
            },
        }


class FeedsDoNotFit(Exception):
    """The float model itself cannot run the feeds (random ones whose sizes the model does not accept)."""


def check_outputs(
    float_model: Path,
    quantized: Path,
    feeds: list[Feed],
    min_cosine: float,
    synthetic: bool,
) -> SanityReport:
    """Run both models on the same feeds and judge every output."""
    import numpy as np

    from ortflow.api.onnx import load_for_ort, ort_errors

    reference, candidate = load_for_ort(float_model), load_for_ort(quantized)
    names = [o.name for o in reference.get_outputs()]
    try:
        ours = [reference.run(names, feed) for feed in feeds]
    except ort_errors() as exc:
        raise FeedsDoNotFit(str(exc).strip().splitlines()[0][:200]) from exc
    theirs = [candidate.run(names, feed) for feed in feeds]
    judged = [
        _judge(
            name, [np.asarray(o[i]) for o in ours], [np.asarray(t[i]) for t in theirs], min_cosine
        )
        for i, name in enumerate(names)
    ]
    return SanityReport(len(feeds), synthetic, judged)


def _judge(name: str, floats: list[Any], quants: list[Any], min_cosine: float) -> OutputCheck:
    import numpy as np

    if not floats or floats[0].dtype.kind not in "fc":
        return OutputCheck(
            name, 1.0, 0.0
        )  # labels, counts, masks: judged by the task metric, not here
    f = np.stack([a.astype(np.float64) for a in floats])
    q = np.stack([a.astype(np.float64) for a in quants])
    problems = []
    if not np.isfinite(q).all() and np.isfinite(f).all():
        problems.append(f"{int((~np.isfinite(q)).sum())} of {q.size} values are NaN or infinite")
        q = np.nan_to_num(q, nan=0.0, posinf=0.0, neginf=0.0)
    cosines = [_cosine(a, b) for a, b in zip(f, q, strict=True)]
    cosine = float(np.mean(cosines))
    relative = float(np.linalg.norm(q - f) / max(np.linalg.norm(f), 1e-12))
    if not q.any() and f.any():
        problems.append("every value is 0")
    elif np.ptp(q) == 0 and np.ptp(f) > 0:
        problems.append(f"constant ({q.flat[0]:.4g}) where the float model's values vary")
    else:
        collapsed = _collapsed_channels(f, q)
        problems += collapsed + _decisions_lost(f, q)
        problems += [] if collapsed else output_groups.groups_disagree(f, q)
    if cosine < min_cosine:
        problems.append(f"mean cosine {cosine:.3f} to the float model (below {min_cosine})")
    blind = output_groups.unjudged(f)
    return OutputCheck(name, cosine, relative, problems, [blind] if blind else [])


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    a, b = a.ravel(), b.ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms == 0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(a @ b / norms)


def _collapsed_channels(f: Any, q: Any) -> list[str]:
    """Channels (along axis 1 or the last axis of each sample's output) that vary in float but are constant
    after quantization, or whose error is as large as their values (their signal is lost: class scores
    rounded to 0 or to one step of a scale set by pixel coordinates)."""
    import numpy as np

    for axis in sorted(
        {2, f.ndim - 1}
    ):  # f is [samples, *output shape]: axis 2 is the output's axis 1
        if axis >= f.ndim or f.shape[axis] < 2:
            continue
        moved_f = np.moveaxis(f, axis, 0).reshape(f.shape[axis], -1)
        moved_q = np.moveaxis(q, axis, 0).reshape(f.shape[axis], -1)
        spread_f, spread_q = moved_f.std(axis=1), moved_q.std(axis=1)
        peak = max(float(np.abs(f).max()), 1e-30)
        varying = spread_f > 1e-6 * peak  # more than rounding noise
        # Only channels that carry a decision can collapse in a way that matters: those reaching 1% of the output's
        # peak, and score-like ones (within [0, 1]) that reach 0.05 somewhere: class scores beside pixel
        # coordinates (0.5 beside 640) count, the probabilities of characters no sample comes near do not.
        highest, lowest = moved_f.max(axis=1), moved_f.min(axis=1)
        meaningful = (np.abs(moved_f).max(axis=1) >= 1e-2 * peak) | (
            (lowest >= 0) & (highest <= 1) & (highest >= 0.05)
        )
        error = np.linalg.norm(moved_q - moved_f, axis=1) / np.maximum(
            np.linalg.norm(moved_f, axis=1), 1e-30
        )
        varying &= meaningful
        constant, lost = varying & (spread_q <= COLLAPSE * spread_f), varying & (error >= LOST)
        # a whole slice, not one edge pixel of a map; and lost signal only in a large share of the channels
        # (an embedding keeps its meaning with a few noisy dimensions: the cosine floor judges those)
        bad = constant | lost
        if constant.sum() >= max(1, DEAD_SHARE * len(bad)) or lost.sum() >= max(
            1, LOST_SHARE * len(bad)
        ):
            dead = np.flatnonzero(bad)
            return [
                f"{len(dead)} of {len(bad)} channels along axis {axis - 1} ({_ranges(dead)}) lost their signal "
                f"(constant, or an error as large as their values: median {float(np.median(error[dead])):.2f} of "
                f"their size): {output_groups.WHY[output_groups.kind(f)]}"
            ]
    return []


def _decisions_lost(f: Any, q: Any) -> list[str]:
    """For a probability output (values in [0, 1] summing to 1 over the last axis: a classifier's, or an OCR
    model's per time step), the class chosen where the float model chooses something other than its most
    frequent answer (the background, a CTC blank) must mostly survive: a model that answers blank everywhere
    keeps most positions and a fair cosine, and reads nothing."""
    import numpy as np

    if f.min() < 0 or f.max() > 1 or not np.allclose(f.sum(axis=-1), 1, atol=1e-2):
        return []
    chosen_f, chosen_q = f.argmax(axis=-1).ravel(), q.argmax(axis=-1).ravel()
    common = np.bincount(chosen_f).argmax()
    decided = (
        chosen_f != common if (chosen_f != common).sum() >= 4 else np.ones_like(chosen_f, bool)
    )
    agreement = float((chosen_f[decided] == chosen_q[decided]).mean())
    if agreement >= MIN_DECISIONS:
        return []
    return [
        f"its top class agrees with the float model's at only {agreement:.0%} of the {int(decided.sum())} positions "
        "where the float model picks something other than its most common answer"
    ]


def _ranges(indices: Any) -> str:
    spans: list[tuple[int, int]] = []
    start: int | None = None
    last = 0
    for i in map(int, indices):
        if start is None:
            start = last = i
        elif i == last + 1:
            last = i
        else:
            spans.append((start, last))
            start = last = i
    if start is not None:
        spans.append((start, last))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:6])
    return text + (", ..." if len(spans) > 6 else "")


@dataclass(frozen=True)
class Samples:
    """The feeds a check runs, and what they are, for its summary."""

    feeds: list[Feed]
    synthetic: bool  # random feeds, not the user's data
    described: str  # "3 samples" (of `data`), "8 samples of the calibration data 'photos'"


def samples_for(ctx: StageContext, model: Path, samples: int) -> Samples:
    """Up to `samples` feeds: from the stage's `data` input; else from the data its calibration table (or
    another input) was made from upstream, referenced, not an input (not in the key, nothing copied); else
    seeded random ones."""
    import itertools

    from ortflow.api import DataProvenance, loader_type, model_inputs

    inputs = model_inputs(model)
    data = ctx.dataset("data") if ctx.has("data") else None
    if data is not None:
        feeds = list(itertools.islice(data.feeds(inputs, samples), samples))
        return Samples(feeds, False, f"{len(feeds)} samples")
    ports = sorted(ctx.upstream_data, key=lambda port: port != "calibration")
    upstream = [(p, d) for p in ports for d in ctx.upstream_datasets(p)]
    found = next((u for u in upstream if u[1].source().provenance != DataProvenance.RANDOM), None)
    if found is not None:
        port, data = found
        feeds = list(itertools.islice(data.feeds(inputs, samples), samples))
        what = (
            "the calibration data"
            if port == "calibration"
            else f"the data its {port} was made from"
        )
        return Samples(feeds, False, f"{len(feeds)} samples of {what} '{data.name}'")
    dims = {d: SYMBOLIC_SIZE for spec in inputs for d in spec.shape[1:] if isinstance(d, str)}
    params = {"samples": samples, "seed": 0, "dims": dims, "ranges": {}}
    feeds = list(loader_type("random")().feeds(params, inputs))
    return Samples(feeds, True, f"{len(feeds)} random samples")


def feeds_for(ctx: StageContext, model: Path, samples: int) -> tuple[list[Feed], bool]:
    """samples_for's feeds, and whether they are random: (feeds, synthetic)."""
    found = samples_for(ctx, model, samples)
    return found.feeds, found.synthetic


def verify_quantized(
    ctx: StageContext,
    settings: SanityChoice,
    float_model: Path,
    quantized: Path,
    metrics: dict[str, SanityMetrics],
) -> str:
    """The sanity check of a quantize stage: adds its numbers (and, when an output collapsed, the nodes where
    the error entered) to `metrics`, the stage's run-record metrics; raises GateFailed when an output
    collapsed on real data, and warns (a log line, and WARNING in the summary) when it did on random feeds.
    Returns a short note for the stage's summary, naming the data the check ran on. The numbers are measured
    with this machine's kernels, so they stay out of the stage's metrics.json, whose bytes must be the same on
    every machine."""
    from ortflow.api import StageError

    if not settings.sanity_check:
        return "sanity check off"
    try:
        used = samples_for(ctx, float_model, settings.sanity_samples)
    except StageError as exc:
        # random feeds need every symbolic axis named: say so rather than guess
        metrics["sanity"] = {"skipped": str(exc)}
        return "sanity check skipped (give it `data`)"
    try:
        report = check_outputs(
            float_model, quantized, used.feeds, settings.sanity_min_cosine, used.synthetic
        )
    except FeedsDoNotFit as exc:
        if not used.synthetic:
            raise StageError(f"the float model cannot run the {used.described}: {exc}") from exc
        metrics["sanity"] = {"skipped": f"random feeds do not fit the model: {exc}"}
        return "sanity check skipped: random feeds do not fit this model (give the stage `data`)"
    metrics["sanity"] = found = report.metrics()
    found["data"] = used.described
    failures = report.failures
    if failures and used.synthetic and not any("NaN" in f for f in failures):
        # random feeds are off the model's distribution (a detector sees no object in noise, and rounding its
        # near-zero scores to 0 is harmless there): do not fail on them, but say it where it is seen
        metrics["sanity"]["advisory"] = True
        warning = f"WARNING: sanity on random feeds flagged {failures[0]} (give the stage `data` for a real check)"
        ctx.log(f"{ctx.stage_name}: {warning}")
        return warning
    if failures:
        _refuse(ctx, float_model, quantized, used, failures, metrics)
    if used.synthetic and report.blind_spots:
        # a detector sees nothing in noise: its class scores, where a collapse hides (issue 35), were not judged
        warning = f"WARNING: sanity on random feeds is blind here: {report.blind_spots[0]} (give the stage `data`)"
        ctx.log(f"{ctx.stage_name}: {warning}")
        return warning
    worst = min((o.cosine for o in report.outputs), default=1.0)
    return f"sanity: worst output cosine {worst:.3f} on {used.described}"


def _refuse(
    ctx: StageContext,
    float_model: Path,
    quantized: Path,
    used: Samples,
    failures: list[str],
    metrics: dict[str, SanityMetrics],
) -> None:
    """Raise the gate's verdict: what collapsed, where the error enters, and the fixes that fit this model."""
    from ortflow.api import GateFailed
    from ortflow.stages.quantization.localization import culprits_text, rank_nodes

    ranked = rank_nodes(float_model, quantized, used.feeds[:4])
    metrics["sanity"]["culprits"] = [e.as_dict() for e in ranked[:10]]
    source = used.described + (
        " (give the stage `data` for a real check)" if used.synthetic else ""
    )
    fixes = ["keep those nodes in float (nodes_to_exclude)"]
    if not ctx.params.get("per_channel", True):
        fixes.append("try per_channel: true (one weight scale per channel)")
    fewer = fewer_op_types(float_model, quantized)
    if fewer:
        fixes.append(f"quantize fewer op types (op_types_to_quantize: [{', '.join(fewer)}])")
    raise GateFailed(
        f"the quantized model is broken on {source}: {'; '.join(failures[:3])}. Where the error enters: "
        f"{culprits_text(ranked)} — {', or '.join(fixes)}; sanity_check: false keeps the model anyway",
        {"sanity": metrics["sanity"]},
    )


# where INT8 pays; the rest is quantized to spare conversions
HEAVY_OPS = ("MatMul", "Gemm", "Conv")


def fewer_op_types(float_model: Path, quantized: Path) -> list[str]:
    """The op types to quantize alone (the heavy ones this model has), where that leaves out some op type the
    stage did quantize; none where it would change nothing (a model whose quantized ops are all heavy)."""
    from ortflow.api import onnx as onnx_model
    from ortflow.stages.quantization.quantized_graph import quantized_ops

    present = onnx_model.op_counts(onnx_model.model_file(float_model))
    heavy = [op for op in HEAVY_OPS if present.get(op)]
    done = {_float_op(op) for op in quantized_ops(quantized)["by_op_type"]}
    return heavy if heavy and done - set(heavy) else []


def _float_op(quantized_op: str) -> str:
    """The float op type a quantized one stands for: QLinearConv, ConvInteger -> Conv; QGemm -> Gemm."""
    name = quantized_op.removeprefix("QLinear").removesuffix("Integer")
    return {
        "DynamicQuantizeMatMul": "MatMul",
        "DynamicQuantizeLSTM": "LSTM",
        "QGemm": "Gemm",
        "QAttention": "Attention",
    }.get(name, name)
