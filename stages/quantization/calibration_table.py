"""ortflow's addition to ORT's calibration-cache JSON (ORT ignores unknown keys): which tensors the
calibrate stage left out because they carry attention-mask fill values, so quantize_static keeps them out
of the quantization too, and whether the graph calibrated was ORT's pre-processed one, so quantize_static
refuses to quantize the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MASK_KEY = "ortflow"


def with_mask_tensors(
    table: dict[str, Any], masked: list[str], pre_processed: bool
) -> dict[str, Any]:
    return {**table, MASK_KEY: {"mask_tensors": sorted(masked), "pre_processed": pre_processed}}


def mask_tensors(table_path: Path) -> list[str]:
    return json.loads(table_path.read_text()).get(MASK_KEY, {}).get("mask_tensors", [])


def pre_processed(table_path: Path) -> bool | None:
    """Whether the table was calibrated on the pre-processed graph; None for a table that does not say."""
    return json.loads(table_path.read_text()).get(MASK_KEY, {}).get("pre_processed")
