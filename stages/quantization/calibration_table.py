"""ortflow's addition to ORT's calibration-cache JSON (ORT ignores unknown keys): which tensors the
calibrate stage left out because they carry attention-mask fill values, so quantize_static keeps them out
of the quantization too, and whether the graph calibrated was ORT's pre-processed one, so quantize_static
refuses to quantize the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

MASK_KEY = "ortflow"


class OrtflowNote(TypedDict):
    """What the table says beyond ORT's form, under MASK_KEY."""

    mask_tensors: list[str]
    pre_processed: bool


class CalibrationCache(TypedDict):
    """The table file's form: ORT's TensorsData.to_dict() (its values ORT objects, written by ORT's
    CalibrationCacheEncoder), with smooth_quant and our note added."""

    CLS: str
    data: Any  # ORT's TensorData per tensor name (onnxruntime ships no types)
    calibration_method: Any  # ORT's CalibrationMethod
    smooth_quant: bool
    ortflow: OrtflowNote  # MASK_KEY


def with_mask_tensors(tensors: Any, masked: list[str], pre_processed: bool) -> CalibrationCache:
    """ORT's table (a TensorsData) as the cache file's object, naming the mask tensors left out."""
    form = tensors.to_dict()
    return {
        "CLS": form["CLS"],
        "data": form["data"],
        "calibration_method": form["calibration_method"],
        "smooth_quant": False,
        "ortflow": {"mask_tensors": sorted(masked), "pre_processed": pre_processed},
    }


def mask_tensors(table_path: Path) -> list[str]:
    return json.loads(table_path.read_text()).get(MASK_KEY, {}).get("mask_tensors", [])


def pre_processed(table_path: Path) -> bool | None:
    """Whether the table was calibrated on the pre-processed graph; None for a table that does not say."""
    return json.loads(table_path.read_text()).get(MASK_KEY, {}).get("pre_processed")
