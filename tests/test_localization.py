"""The SQNR that ranks where quantization error enters (stages/quantization/localization.py channel_sqnr): summed
per channel over the other axes, squares in float32, redone in float64 where a float32 square overflows."""

from __future__ import annotations

import math

import numpy as np

from ortflow.stages.quantization.localization import CHANNEL_QUANTILE, EXACT_DB, channel_sqnr


def _db(f: np.ndarray, q: np.ndarray) -> float:
    return 10 * math.log10(float(np.sum(f * f)) / float(np.sum((f - q) ** 2)))


def test_one_channel_lost_shows_in_the_channel_figure():
    """Ten channels along the last axis, one of them quantized to zero: the whole-tensor ratio hides it, the
    per-channel quantile does not."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=(2, 3, 10)).astype(np.float32)
    q = f + rng.normal(scale=1e-3, size=f.shape).astype(np.float32)
    q[..., 9] = 0.0
    per_channel = [
        _db(f[..., c].astype(np.float64), q[..., c].astype(np.float64)) for c in range(10)
    ]
    expected = min(
        _db(f.astype(np.float64), q.astype(np.float64)),
        float(np.quantile(per_channel, CHANNEL_QUANTILE)),
    )
    assert abs(channel_sqnr(list(f), list(q)) - expected) < 1e-3
    assert channel_sqnr(list(f), list(f)) == EXACT_DB  # the reference against itself: exact


def test_values_whose_float32_square_overflows_are_scored_in_float64():
    rng = np.random.default_rng(1)
    f = (rng.normal(size=(2, 4, 6)) * 1e25).astype(np.float32)
    q = f + (rng.normal(size=f.shape) * 1e24).astype(np.float32)
    found = channel_sqnr(list(f), list(q))
    assert math.isfinite(found) and 10 < found < 30, found
    assert abs(found - channel_sqnr(list(f / 1e25), list(q / 1e25))) < 1e-3  # scale-free
