"""ortflow's addition to ORT's calibration-cache JSON (ORT ignores unknown keys): which tensors the
calibrate stage left out because they carry attention-mask fill values, so quantize_static keeps them out
of the quantization too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MASK_KEY = "ortflow"


def with_mask_tensors(table: dict[str, Any], masked: list[str]) -> dict[str, Any]:
    return {**table, MASK_KEY: {"mask_tensors": sorted(masked)}}


def mask_tensors(table_path: Path) -> list[str]:
    return json.loads(table_path.read_text()).get(MASK_KEY, {}).get("mask_tensors", [])
