"""Float values as text for run records and lock files: exact float64, little-endian, base64."""

from __future__ import annotations

import base64
import sys
from array import array
from typing import Sequence


def pack_floats(values: Sequence[float]) -> str:
    """Float values as text for a run record and a lock file: float64, little-endian, base64 (exact, and a
    quarter of the length of the numbers written out)."""
    packed = array("d", values)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def unpack_floats(text: str) -> tuple[float, ...]:
    """The values pack_floats wrote; ValueError for text it did not write."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) % 8:
        raise ValueError("not a whole number of float64 values")
    values = array("d")
    values.frombytes(raw)
    if sys.byteorder == "big":
        values.byteswap()
    return tuple(values)


__all__ = ["pack_floats", "unpack_floats"]
