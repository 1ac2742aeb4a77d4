"""The calibrate stage's ranges: each activation's clean values (no NaN, no mask fill) reduced to a (low, high)
as batches come, by the calibration method; the lock file's ranges kept where ours agree within TOLERANCE; and
the table written in ORT's calibration-cache JSON, with the mask tensors named. Split from the stage so that it
reads as the stage's steps (schedule the passes, observe the batches, write the table and the metrics)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import StageContext
from ortflow.stages.quantization.calibration_table import with_mask_tensors

METHODS = {
    "minmax": "MinMax",
    "entropy": "Entropy",
    "percentile": "Percentile",
    "distribution": "Distribution",
}
DEFAULT_BINS = {
    "entropy": 128,
    "percentile": 2048,
    "distribution": 2048,
}  # ORT wants >= 512 for distribution
# When two CPUs' ranges for one model and data are the same result (the lock's kept; docs/cache.md):
# - minmax, in each tensor's span (max - min): 1e-4, far below what 8-bit quantization resolves (1/255), far
#   above the last-bit differences measured between CPUs: recipes/minilm-cpu-int8.yaml on an AVX2 EPYC against
#   an AMX Xeon (onnxruntime 1.31.1), every minmax range within 1e-4 of its span.
TOLERANCE = 1e-4
# - entropy and percentile, in bins of the method's histogram (span / num_bins): the range is a bin edge the
#   method picks, so a CPU's last-bit difference can move it by a whole bin. Measured on the same two hosts
#   (tests/data/lock-avx2/): entropy (128 bins), 40 of 118 tensors moved by at most 2.1e-7 of their span
#   (3e-5 bin) and one by 0.67% of its span, 0.85 bin; percentile (2048 bins) within 1e-4 of span (0.2 bin).
TOLERANCE_BINS = 1.0


def tolerance(params: Mapping[str, Any]) -> float:
    """The share of a tensor's span within which two CPUs' ranges are one result, for the method."""
    method = params["method"]
    if method in ("entropy", "percentile"):
        return TOLERANCE_BINS / (params.get("num_bins") or DEFAULT_BINS[method])
    return TOLERANCE


def worst_difference(ours: tuple[float, ...], locked: tuple[float, ...]) -> float:
    """The largest difference between two flat (low, high, ...) range lists, as a share of the span."""
    if len(ours) != len(locked) or len(ours) % 2:
        return float("inf")
    worst = 0.0
    for index in range(0, len(ours), 2):
        span = max(ours[index + 1] - ours[index], locked[index + 1] - locked[index], 1e-12)
        for a, b in ((ours[index], locked[index]), (ours[index + 1], locked[index + 1])):
            worst = max(worst, abs(a - b) / span)
    return worst


@dataclass(frozen=True)
class Histogram:
    """What ORT's HistogramCollector is made with, for the histogram methods."""

    method: str
    symmetric: bool
    num_bins: int
    num_quantized_bins: int
    percentile: float


class ActivationRanges:
    """What calibration has seen of each tensor so far, reduced as it comes: for minmax the per-batch extremes,
    for the histogram methods ORT's HistogramCollector; and the mask fills left out, counted per tensor."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        method = params["method"]
        self.collector = (
            None  # minmax keeps per-batch extremes
            if method == "minmax"
            else _histogram_collector(
                Histogram(
                    method,
                    params["symmetric"],
                    params.get("num_bins") or DEFAULT_BINS[method],
                    params["num_quantized_bins"],
                    params["percentile"],
                )
            )
        )
        self.lows: dict[str, list[float]] = {}
        self.highs: dict[str, list[float]] = {}
        self.masked: dict[str, int] = {}

    def clean(self, name: str, values: Any) -> Any:
        """One tensor's values from one batch, flattened, without NaN and mask fills (counted); None when no
        value is left. A step of its own so that the caller drops the raw values before they are reduced."""
        return _without_fills(values, self.params["mask_threshold"], name, self.masked)

    def add(self, name: str, values: Any) -> None:
        """Reduce one tensor's clean values from one batch: its extremes for minmax, else its histogram."""
        if self.collector is None:
            self.lows.setdefault(name, []).append(float(values.min()))
            self.highs.setdefault(name, []).append(float(values.max()))
        else:
            _histogram(self.collector, name, values)

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Each tensor's (low, high): the histogram method's result, or for minmax the per-batch extremes
        reduced (the extremes, or their mean with moving_average), widened to symmetric if asked."""
        import numpy as np

        collector, lows, highs, params = self.collector, self.lows, self.highs, self.params
        if collector is not None:
            if not collector.histogram_dict:
                return {}
            result = collector.compute_collection_result()
            return {
                name: (
                    float(np.asarray(v.range_value[0] if hasattr(v, "range_value") else v[0])),
                    float(np.asarray(v.range_value[1] if hasattr(v, "range_value") else v[1])),
                )
                for name, v in result.items()
            }
        reduce_low, reduce_high = (
            (np.mean, np.mean) if params["moving_average"] else (np.min, np.max)
        )
        ranges = {}
        for name in lows:
            low, high = float(reduce_low(lows[name])), float(reduce_high(highs[name]))
            if params["symmetric"]:
                bound = max(abs(low), abs(high))
                low, high = -bound, bound
            ranges[name] = (low, high)
        return ranges


def _histogram_collector(histogram: Histogram) -> Any:
    """The histogram a histogram method reduces to ranges."""
    from onnxruntime.quantization.calibrate import HistogramCollector

    return HistogramCollector(
        method=histogram.method,
        symmetric=histogram.symmetric,
        num_bins=histogram.num_bins,
        num_quantized_bins=histogram.num_quantized_bins,
        percentile=histogram.percentile,
        scenario="same",
    )


def agree_with_lock(
    ctx: StageContext, ranges: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """The lock file's ranges for this very key when ours agree with them within the method's tolerance. Activations
    differ in their last bits from CPU to CPU (other kernels, other rounding): the same model and data
    are the same result, and keeping the recorded values keeps the table's bytes, every key downstream
    and the committed lock file as they are. A real difference is left to show as one."""
    names = sorted(ranges)
    locked = ctx.pinned_values("table")
    if locked is None or len(locked) != 2 * len(names):
        return ranges
    worst = worst_difference(tuple(v for name in names for v in ranges[name]), locked)
    limit = tolerance(ctx.params)
    if worst > limit:
        ctx.log(
            f"{ctx.stage_name}: ranges differ from the lock file's by up to {worst:.1e} of a tensor's span, "
            f"beyond the tolerance {limit:.2g}: a different result"
        )
        return ranges
    if worst > 0:
        ctx.log(
            f"{ctx.stage_name}: ranges within {worst:.1e} of the lock file's (tolerance {limit:.2g} of each "
            "tensor's span; CPUs round differently): the lock file's values are kept"
        )
    return {name: (locked[2 * i], locked[2 * i + 1]) for i, name in enumerate(names)}


def write_table(
    path: Path,
    method: str,
    ranges: dict[str, tuple[float, float]],
    masked: dict[str, int],
    pre_processed: bool,
) -> None:
    """The table in ORT's calibration-cache JSON, plus the names of the mask tensors and whether the graph
    calibrated was the pre-processed one."""
    import numpy as np
    from onnxruntime.quantization.calibrate import (
        CalibrationCacheEncoder,
        CalibrationMethod,
        TensorData,
        TensorsData,
    )

    # Mask tensors stay out of the table: clamping their fills to a data range would let padding tokens
    # into attention. The table names them so quantize_static keeps their producers and consumers in float.
    table = TensorsData(
        getattr(CalibrationMethod, METHODS[method]),
        {
            name: TensorData(lowest=np.float32(lo), highest=np.float32(hi))
            for name, (lo, hi) in sorted(ranges.items())
            if name not in masked
        },
    )
    payload = with_mask_tensors(table, sorted(masked), pre_processed)
    path.write_text(
        json.dumps(payload, cls=CalibrationCacheEncoder, sort_keys=True), encoding="utf-8"
    )


def _without_fills(values: Any, threshold: float, name: str, masked: dict[str, int]) -> Any:
    """A tensor's values, flattened, without NaN and without mask fills (magnitude at or above `threshold`,
    e.g. the -3.4e38 of an attention mask), so one padded sentence cannot blow a range up. Counts the fills
    left out into `masked`; None when no value is left."""
    import numpy as np

    values = np.asarray(values).ravel()
    values = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    fills = np.abs(values) >= threshold
    if fills.any():
        masked[name] = masked.get(name, 0) + int(fills.sum())
        values = values[~fills]
    return values if values.size else None


def _histogram(collector: Any, name: str, values: Any) -> None:
    """Add one tensor's values to its histogram: what HistogramCollector.collect does for the method, without
    the line it prints on every call (once per tensor and batch here)."""
    if collector.method == "percentile" and collector.symmetric:
        collector.collect_absolute_value({name: values})
    else:
        collector.collect_value({name: values})
