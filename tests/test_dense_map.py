"""The dense_map metric's arithmetic on maps whose overlap is known by hand: IoU and Dice per sample, the mean
and the worst, the threshold it picks by itself, and what it refuses. The real model (an OCR text detector's
probability map) is in test_init.py."""

from __future__ import annotations

import numpy as np
import pytest

from ortflow.engine.contracts.registry import metric_type
from ortflow.engine.leaves.errors import StageError
from ortflow.stages.measurement.task_metrics import configured, problems
from ortflow.stages.metrics.dense_map import DenseMapAgreement


def _map(marked: list[tuple[int, int]], value: float = 0.9, low: float = 0.1) -> np.ndarray:
    """One sample's [1, 1, 4, 4] probability map with `marked` pixels above 0.5."""
    array = np.full((1, 1, 4, 4), low, np.float32)
    for row, col in marked:
        array[0, 0, row, col] = value
    return array


def _compute(
    reference: list[np.ndarray], candidate: list[np.ndarray], **params
) -> dict[str, float]:
    [entry] = configured({"dense_map": {"outputs": ["map"], **params}})
    return entry.metric.compute(
        {"map": reference}, {"map": candidate}, [{}] * len(reference), entry.params
    )


def test_iou_and_dice_per_sample_with_the_worst_and_the_mean():
    square = [(0, 0), (0, 1), (1, 0), (1, 1)]
    # sample 1: the same 4 pixels (IoU 1); sample 2: 2 of 4 kept and 2 others added (IoU 2/6, Dice 4/8)
    reference = [_map(square), _map(square)]
    candidate = [_map(square), _map([(0, 0), (0, 1), (3, 3), (3, 2)])]
    values = _compute(reference, candidate)
    assert values == pytest.approx(
        {"iou_mean": (1 + 2 / 6) / 2, "iou_min": 2 / 6, "dice_mean": (1 + 0.5) / 2, "dice_min": 0.5}
    )


def test_a_feed_holding_a_batch_counts_each_sample_and_empty_maps_agree():
    reference = [
        np.concatenate([_map([(2, 2)]), _map([])])
    ]  # one feed of two samples; the second marks nothing
    candidate = [np.concatenate([_map([]), _map([])])]
    values = _compute(reference, candidate)
    assert values == pytest.approx(
        {"iou_mean": 0.5, "iou_min": 0.0, "dice_mean": 0.5, "dice_min": 0.0}
    )


def test_the_threshold_is_auto_from_the_reference_range_or_as_set():
    # values in [0, 1]: 0.5 — 0.6 is marked, 0.4 is not
    assert _compute([_map([(0, 0)], 0.6, 0.4)], [_map([], 0.6, 0.4)])["iou_min"] == 0.0
    # logits (outside [0, 1]): 0 — a map of -3 with one pixel at +2 marks that pixel
    logits = _map([(1, 1)], 2.0, -3.0)
    assert _compute([logits], [logits])["iou_min"] == 1.0
    assert _compute([logits], [_map([(1, 1), (2, 2)], 2.0, -3.0)])["iou_mean"] == pytest.approx(0.5)
    # set by hand: at 0.95 nothing of a 0.9 map is marked, so both are empty and agree
    assert _compute([_map([(0, 0)])], [_map([])], threshold=0.95)["iou_min"] == 1.0


def test_it_is_installed_and_refuses_what_is_not_a_map():
    assert metric_type("dense_map") is DenseMapAgreement
    assert problems({"dense_map": {}}) == [
        "metrics: dense_map: parameters: 'outputs' is a required property"
    ]
    assert problems({"dense_map": {"outputs": ["m"], "threshold": "half"}})
    with pytest.raises(StageError, match="a dense map has a sample axis"):
        _compute([np.float32(0.5)], [np.float32(0.5)])
    with pytest.raises(StageError, match="shaped"):
        _compute([_map([])], [np.zeros((1, 1, 2, 2), np.float32)])
