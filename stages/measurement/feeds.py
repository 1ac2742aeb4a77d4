"""The feeds benchmark times: cut or padded to a sequence length, and grouped in full batches."""

from __future__ import annotations

from typing import Any

from ortflow.api import StageError, batched


def full_batches(feeds: list[dict], batch_size: int, axes: dict[str, int | None]) -> list[dict]:
    """Batches of exactly `batch_size` samples: feeds are repeated when there are too few, and a leftover
    partial batch is dropped (timing it as a full one would overstate throughput)."""
    repeated = feeds * -(-batch_size // len(feeds))  # at least one full batch
    usable = len(repeated) - len(repeated) % batch_size
    return list(batched(repeated[:usable], batch_size, axes))


def with_length(feed: dict, length: int | None, inputs: list[Any]) -> dict:
    """The feed with axis 1 of each input cut or zero-padded to `length` (None: unchanged)."""
    import numpy as np

    if length is None:
        return feed
    shaped = {}
    for spec in inputs:
        array = feed[spec.name]
        if array.ndim < 2:
            shaped[spec.name] = array
            continue
        if isinstance(spec.shape[1], int) and spec.shape[1] > 0 and spec.shape[1] != length:
            raise StageError(
                f"input '{spec.name}' fixes axis 1 at {spec.shape[1]}: sequence_length {length} cannot apply"
            )
        if array.shape[1] >= length:
            shaped[spec.name] = np.ascontiguousarray(array[:, :length])
        else:
            padding = [(0, 0), (0, length - array.shape[1])] + [(0, 0)] * (array.ndim - 2)
            shaped[spec.name] = np.pad(array, padding)
    return shaped
