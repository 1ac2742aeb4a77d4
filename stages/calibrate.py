"""calibrate: run a model over a dataset and record each activation's range for static quantization."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.api import (
    ArtifactKind,
    Feed,
    Params,
    Port,
    Stage,
    StageContext,
    StageError,
    StageResult,
    batched,
    model_inputs,
    settings_of,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import activation_ranges, calibration_passes, pre_processing

if TYPE_CHECKING:
    from onnx import ValueInfoProto


@dataclass(frozen=True)
class CalibrateSettings:
    """Calibrate's parameters (its params_schema; tests/unit/test_stages_typed.py holds the two together). Not
    declared as Stage.settings yet: activation_ranges still reads ctx.params by key."""

    method: str = "minmax"  # one of activation_ranges.METHODS
    percentile: float = 99.999
    num_bins: int | None = None  # None: ORT's for the method
    num_quantized_bins: int = 128
    symmetric: bool = False
    moving_average: bool = False
    samples: int = 200
    batch_size: int = 8
    op_types_to_calibrate: tuple[str, ...] = ()
    mask_threshold: float = 1e30
    max_memory_mb: int | None = None  # None: one pass
    pre_process: bool | str = "auto"


@dataclass(frozen=True)
class PassUse:
    """How the tensors were read: in how many passes over the data, and the most one batch's values held."""

    passes: int
    held_mb: float


class Calibrate(Stage):
    type = "calibrate"
    version = "2"  # 2: pre_process auto (the default), and the table says whether its graph was pre-processed
    description = (
        "Run the model (after ORT's quant_pre_process, like quantize_static) over a dataset in batches and "
        "write a calibration table (ORT's JSON format: tensor -> range). Values at or beyond the mask "
        "threshold (the -3.4e38 fills of attention masks) are left out of every range, so one padded "
        "sentence cannot blow a range up. A separate cached stage, so several quantizations share one table."
    )
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the fp32 model to be quantized"),
        Port("data", ArtifactKind.DATASET, "representative inputs"),
    )
    outputs = (
        Port(
            "table",
            ArtifactKind.CALIBRATION_TABLE,
            "tensor ranges (onnxruntime.quantization JSON cache)",
            filename="calibration.json",
        ),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "samples used, tensors calibrated, masked tensors",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "method": {
                "enum": list(activation_ranges.METHODS),
                "default": "minmax",
                "description": "minmax, entropy, percentile or distribution",
            },
            "percentile": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 100,
                "default": 99.999,
                "description": "percentile method: the share of values the range covers",
            },
            "num_bins": {
                "type": "integer",
                "minimum": 2,
                "description": "histogram bins (default: ORT's for the method)",
            },
            "num_quantized_bins": {
                "type": "integer",
                "minimum": 2,
                "default": 128,
                "description": "entropy method: target bins",
            },
            "symmetric": {
                "type": "boolean",
                "default": False,
                "description": "ranges symmetric around zero",
            },
            "moving_average": {
                "type": "boolean",
                "default": False,
                "description": "minmax: average per-batch ranges instead of the extremes",
            },
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 200,
                "description": "at most this many samples",
            },
            "batch_size": {
                "type": "integer",
                "minimum": 1,
                "default": 8,
                "description": "samples per inference; bounds memory",
            },
            "op_types_to_calibrate": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "only outputs of these op types (default: all float tensors)",
            },
            "mask_threshold": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 1e30,
                "description": "values with a magnitude at or above this are mask fills, not data",
            },
            "max_memory_mb": {
                "type": "integer",
                "minimum": 1,
                "description": "bound on the tensor values held for one batch (the model's own memory comes on "
                "top): tensors that do not fit together are read in several passes over the "
                "data, the same table either way (default: one pass)",
            },
            "pre_process": pre_processing.PRE_PROCESS_PARAM,
        },
    }

    def check(self, params: Params) -> list[str]:
        read = settings_of(CalibrateSettings, params)
        method, bins = read.method, read.num_bins
        problems = []
        if read.moving_average and method != "minmax":
            problems.append("moving_average applies to method minmax only")
        if bins is not None and method == "minmax":
            problems.append(
                "num_bins applies to the histogram methods (entropy, percentile, distribution) only"
            )
        if bins is not None and method == "distribution" and bins < 512:
            problems.append(
                f"num_bins {bins} is too few for method distribution: ORT needs at least 512"
            )
        if bins is not None and method == "entropy" and bins < read.num_quantized_bins:
            problems.append(
                f"num_bins {bins} is below num_quantized_bins {read.num_quantized_bins}"
            )
        return problems

    def env_facts(self, params: Params) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy")

    @classmethod
    def same_result(
        cls,
        params: Params,
        port: str,
        ours: tuple[float, ...],
        locked: tuple[float, ...],
    ) -> bool:
        """Two CPUs' tables agree within the method's tolerance (activation_ranges.tolerance): a cached
        table another CPU made is drift from the lock's, not tampering."""
        if port != "table":
            return False
        limit = activation_ranges.tolerance(params)
        return activation_ranges.worst_difference(ours, locked) <= limit

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(CalibrateSettings)
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        prepared = pre_processing.prepare(source, ctx.scratch, params.pre_process)
        model = prepared.model
        value_infos, passes = self._schedule(ctx, params, model)
        observed = activation_ranges.ActivationRanges(dict(ctx.params))  # it reads them by key
        held, samples = 0, 0
        for index, group in enumerate(passes):
            session = calibration_passes.session(
                calibration_passes.pass_model(
                    model, [value_infos[n] for n in group.tensors], f"calibration-pass-{index}.onnx"
                )
            )
            samples, peak = self._observe(
                ctx,
                params,
                model,
                session,
                observed,
                f" (pass {index + 1} of {len(passes)})" if len(passes) > 1 else "",
            )
            held = max(held, peak)
            del session
        ranges, masked = observed.ranges(), observed.masked
        if not ranges:
            raise StageError(
                "no tensor could be calibrated: the model has no float activations to quantize "
                f"(or every value was at or above mask_threshold {params.mask_threshold:g})"
            )
        ranges = activation_ranges.agree_with_lock(ctx, ranges)
        activation_ranges.write_table(
            ctx.output_path("table"), params.method, ranges, masked, prepared.pre_processed
        )
        result = self._result(
            ctx,
            params,
            ranges,
            masked,
            samples,
            PassUse(len(passes), round(held / calibration_passes.MB, 1)),
            prepared,
        )
        result.values = {"table": [value for name in sorted(ranges) for value in ranges[name]]}
        return result

    # -- the steps of run, in order ------------------------------------------------------------------

    @staticmethod
    def _schedule(
        ctx: StageContext, params: CalibrateSettings, model: Path
    ) -> tuple[dict[str, ValueInfoProto], list[calibration_passes.Pass]]:
        """The tensors to calibrate (name -> value info), grouped into passes that fit max_memory_mb (one pass
        without it)."""
        value_infos = calibration_passes.tensors_to_calibrate(
            model, list(params.op_types_to_calibrate)
        )
        bound = params.max_memory_mb
        if bound is None:
            return value_infos, calibration_passes.schedule(dict.fromkeys(value_infos, 0), 1, None)
        dataset = ctx.dataset("data")
        inputs = model_inputs(model)
        first = next(iter(dataset.feeds(inputs, limit=1)), None)
        if first is None:
            raise StageError(f"dataset '{dataset.name}' has no samples to calibrate on")
        sizes = calibration_passes.bytes_per_sample(
            model, value_infos, first, _batch_length(first, inputs, dataset.batch_axes)
        )
        batch_size = 1 if _fixed_batch(inputs, dataset.batch_axes) else params.batch_size
        return value_infos, calibration_passes.schedule(
            sizes, batch_size, bound * calibration_passes.MB
        )

    @staticmethod
    def _observe(
        ctx: StageContext,
        params: CalibrateSettings,
        model: Path,
        session: Any,
        observed: activation_ranges.ActivationRanges,
        said: str,
    ) -> tuple[int, int]:
        """Run the model over the dataset batch by batch and add each tensor's values to `observed` (its clean
        values go to the histogram, or, for minmax, their per-batch extremes are recorded; mask fills are
        counted). Each tensor is reduced and dropped in turn, and a batch's values are gone before the next
        batch runs. Returns (samples run, the most bytes one batch's values held)."""
        names = [o.name for o in session.get_outputs()]
        samples, held = 0, 0
        inputs = model_inputs(model)
        dataset = ctx.dataset("data")
        batch_size = 1 if _fixed_batch(inputs, dataset.batch_axes) else params.batch_size
        for batch in batched(
            dataset.feeds(inputs, limit=params.samples), batch_size, dataset.batch_axes
        ):
            samples += _batch_length(batch, inputs, dataset.batch_axes)
            try:
                outputs = dict(zip(names, session.run(names, batch)))
            except Exception as exc:
                raise StageError(
                    f"running the model on the dataset failed at sample {samples}: {exc}"
                ) from exc
            held = max(held, sum(v.nbytes for v in outputs.values()))
            ctx.progress(samples, None, f"samples calibrated (at most {params.samples}){said}")
            for name in sorted(outputs):  # sorted: the table's bytes must not vary run to run
                values = observed.clean(name, outputs.pop(name))
                if values is not None:
                    observed.add(name, values)
                del values
        return samples, held

    @staticmethod
    def _result(
        ctx: StageContext,
        params: CalibrateSettings,
        ranges: dict[str, tuple[float, float]],
        masked: dict[str, int],
        samples: int,
        passes: PassUse,
        prepared: pre_processing.Prepared,
    ) -> StageResult:
        """Write the metrics (with the five widest ranges) and sum the calibration up."""
        method = params.method
        metrics = {
            "method": method,
            "samples": samples,
            "tensors": len(ranges) - len(masked),
            "masked_tensors": dict(sorted(masked.items())),
            **prepared.metrics(),
            "widest": dict(
                sorted(
                    ((n, [round(lo, 4), round(hi, 4)]) for n, (lo, hi) in ranges.items()),
                    key=lambda item: item[1][0] - item[1][1],
                )[:5]
            ),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = f"{method}: {len(ranges) - len(masked)} tensors from {samples} samples"
        if masked:
            summary += f"; mask fills left out of {len(masked)} tensors"
        bound = params.max_memory_mb
        if bound is not None and passes.held_mb > bound:
            summary += (
                f"; {passes.passes} passes, one batch held {passes.held_mb} MB, over max_memory_mb {bound} "
                "(a tensor larger than the bound, or samples larger than the first): lower batch_size"
            )
        elif passes.passes > 1:
            summary += f"; {passes.passes} passes within max_memory_mb {bound}"
        summary += f"; {prepared.summary()}" if prepared.summary() else ""
        return StageResult(
            summary=summary,
            metrics={
                "samples": samples,
                "tensors": len(ranges) - len(masked),
                "masked": len(masked),
                "process_peak_rss_mb": _peak_rss_mb(),
                "passes": passes.passes,
                "held_mb": passes.held_mb,
                **prepared.metrics(),
            },
        )


def _batch_axis(spec: Any, axes: dict[str, int | None]) -> int | None:
    axis = axes.get(spec.name, 0 if spec.shape else None)
    return axis if axis is not None and axis < len(spec.shape) else None


def _fixed_batch(inputs: list[Any], axes: dict[str, int | None]) -> bool:
    """A model whose batch axis is fixed (usually at 1) takes one sample per run."""
    dims = [i.shape[a] for i in inputs if (a := _batch_axis(i, axes)) is not None]
    return any(isinstance(d, int) and d > 0 for d in dims)


def _batch_length(batch: Feed, inputs: list[Any], axes: dict[str, int | None]) -> int:
    """The samples in a batch: the size of the first batched input's batch axis."""
    for spec in inputs:
        axis = _batch_axis(spec, axes)
        if axis is not None:
            return int(batch[spec.name].shape[axis])
    return 1


def _peak_rss_mb() -> float | None:
    """The process's peak resident memory so far (in the run record, not the table: it is no property of the
    data). Ranges are reduced batch by batch and tensor by tensor, so it does not grow with the number of
    samples: MiniLM with percentile, 60 or 240 samples, peaks at 0.59 GB either way on this project's machine
    (1.55 GB when a batch's values were kept while the next batch ran)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
