"""The random loader refuses a feed over its bound before allocating anything (a recipe asking for a
[1, 2**40] input used to run into MemoryError or the machine's swap)."""

from __future__ import annotations

import pytest

from ortflow.api import ModelInput, StageError
from ortflow.loaders.random import RandomLoader

PARAMS = {"samples": 1, "seed": 0, "dims": {}, "ranges": {}}


@pytest.mark.parametrize(
    "shape, dims",
    [((1, 1 << 40), {}), (("batch", "n"), {"n": 1 << 40}), ((1 << 20, 1 << 20, 1 << 30), {})],
)
def test_a_feed_over_the_bound_is_refused_naming_the_input_and_the_fix(shape, dims):
    inputs = [ModelInput("x", "float32", shape)]
    with pytest.raises(
        StageError,
        match=r"random: input 'x' would hold .* over the loader's bound of 268,435,456 .* `dims`",
    ):
        next(RandomLoader().feeds({**PARAMS, "dims": dims}, inputs))
