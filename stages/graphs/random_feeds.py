"""Random feeds for a stage's own check against the original model when the recipe gives it no data (specialize,
convert_float32): 0/1 for integer and bool inputs (masks and ids stay valid), standard normal floats otherwise,
seeded, so the check is the same on every run. A verdict on them is labelled random (DataProvenance.RANDOM)."""

from __future__ import annotations

from typing import Mapping, Sequence

from ortflow.api import Feed


def random_feeds(shapes: Mapping[str, tuple[Sequence[int], str]], count: int) -> list[Feed]:
    """`count` feeds of the inputs named in `shapes` (name -> (fixed shape, numpy dtype name))."""
    import numpy as np

    rng = np.random.default_rng(0)
    feeds = []
    for _ in range(count):
        feed = {}
        for name, (shape, dtype) in shapes.items():
            kind = np.dtype(dtype)
            feed[name] = (
                rng.integers(0, 2, size=tuple(shape)).astype(kind)
                if kind.kind in "iub"
                else rng.standard_normal(tuple(shape)).astype(kind)
            )
        feeds.append(feed)
    return feeds
