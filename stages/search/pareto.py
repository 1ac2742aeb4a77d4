"""The Pareto front: the points no other point beats on every axis."""

from __future__ import annotations

from typing import Sequence


def pareto_front(points: Sequence[Sequence[float]]) -> list[bool]:
    """For each point (every axis: higher is better), whether no other point is at least as good on every
    axis and better on one."""

    def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
        return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))

    return [not any(dominates(other, point) for other in points) for point in points]
