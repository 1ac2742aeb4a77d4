"""select's candidates and what it writes about them: each (model, benchmark configuration) with its metrics
and misses, the outcome of judging them all, and selection.json with its section of the run report (every
candidate against the constraints, the objective against a constrained metric with the Pareto front)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ortflow.api import (
    Bounds,
    DataProvenance,
    DataSource,
    ReportSection,
    Scalar,
    Selection,
    SelectionCandidate,
)

if TYPE_CHECKING:
    from ortflow.api import Json, SessionSettings, Table


@dataclass
class Candidate:
    id: str
    model: int  # index into the `models` input
    config: dict[str, Scalar] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    shortfall: float = 0.0  # the largest relative miss of a constraint (0 when all are met)
    session: SessionSettings | None = (
        None  # how its timings' session was made (from the benchmark row)
    )
    # the data its activation ranges were calibrated on in this recipe (None: no ranges made here)
    calibrated_on: DataSource | None = None


def uncalibrated(source: DataSource | None) -> str | None:
    """Why a model whose activation ranges came from `source` may not be chosen, or None where it may (real
    data, or no ranges made here). Ranges taken from random feeds fit noise: such a model can score 0.9998 on
    noise and find none of a detector's boxes on real images, so no score on any data makes it eligible."""
    if source is None or source.verified:
        return None
    said = (
        "random feeds"
        if source.provenance is DataProvenance.RANDOM
        else f"data of unknown provenance ({source.loader} {source.dataset})".replace(" )", ")")
    )
    return (
        f"ineligible: its activation ranges were calibrated on {said}, which says nothing of real inputs — "
        "calibrate on real samples (engine optimize MODEL -o OUT --data PATH, or real files in the "
        "calibration dataset)"
    )


@dataclass(frozen=True)
class Outcome:
    """Every candidate judged against the constraints, the one chosen (None when none qualifies) and the
    Pareto front: what selection.json, its report section and the stage's summary are written from."""

    goal: str  # minimize or maximize
    objective: str
    constraints: Bounds
    candidates: list[Candidate]
    chosen: Candidate | None
    front: set[str]
    plotted: str | None  # the constrained metric the objective is plotted against
    measured_on: DataSource | None  # what the accuracy verdict was measured on

    @property
    def eligible(self) -> list[Candidate]:
        return [c for c in self.candidates if not c.misses]


def selection_document(outcome: Outcome, names: list[str]) -> Selection:
    """selection.json: `names` are the models' labels, which the candidates index."""
    return Selection(
        outcome.goal,
        outcome.objective,
        outcome.constraints,
        outcome.measured_on,
        outcome.chosen.id if outcome.chosen else None,
        [
            SelectionCandidate(
                c.id,
                names[c.model],
                c.config,
                c.values,
                not c.misses,
                c.misses,
                c.id in outcome.front,
                c is outcome.chosen,
                c.session,
                c.calibrated_on,
            )
            for c in outcome.candidates
        ],
        _report(outcome),
    )


def _report(outcome: Outcome) -> ReportSection:
    charts: list[dict[str, Json]] = []
    if outcome.plotted:
        charts.append(_scatter(outcome, outcome.plotted))
    return {"tables": [_candidates_table(outcome)], "charts": charts}


def _candidates_table(outcome: Outcome) -> Table:
    """The candidates, those meeting the constraints first, each group best first by the objective; the
    columns: the objective, the constrained metrics, then the usual ones where any candidate has them."""
    objective, goal, candidates = outcome.objective, outcome.goal, outcome.candidates
    metrics = list(
        dict.fromkeys(
            [
                objective,
                *outcome.constraints.min,
                *outcome.constraints.max,
                "p50_ms",
                "speedup",
                "size_mb",
                "cosine_mean",
            ]
        )
    )
    metrics = [m for m in metrics if any(m in c.values for c in candidates)]
    order = sorted(
        candidates,
        key=lambda c: (
            bool(c.misses),
            (-1 if goal == "maximize" else 1) * c.values.get(objective, math.inf),
        ),
    )
    rows: list[list[Json]] = [
        [
            c.id + (" (chosen)" if c is outcome.chosen else ""),
            *[c.values.get(m, "") for m in metrics],
            "yes" if not c.misses else "no: " + "; ".join(c.misses),
            "yes" if c.id in outcome.front else "",
        ]
        for c in order
    ]
    source = outcome.measured_on
    on = f" — accuracy on {source.label()}" if source is not None else ""
    return {
        "title": f"Candidates: {goal} {objective} subject to the constraints{on}",
        "rows": rows,
        "columns": ["candidate", *metrics, "meets constraints", "Pareto"],
    }


def _scatter(outcome: Outcome, plotted: str) -> dict[str, Json]:
    objective = outcome.objective
    points: list[Json] = [
        {
            "label": c.id,
            "x": c.values[objective],
            "y": c.values[plotted],
            "front": c.id in outcome.front,
            "chosen": c is outcome.chosen,
        }
        for c in outcome.candidates
        if objective in c.values and plotted in c.values
    ]
    return {
        "kind": "scatter",
        "title": f"{objective} against {plotted} (Pareto front marked)",
        "points": points,
        "x_label": objective,
        "y_label": plotted,
        # the plotted metric's constraint: the report's y axis starts there, not at the closest point
        **(
            {"y_bound": outcome.constraints.min[plotted]}
            if plotted in outcome.constraints.min
            else {}
        ),
    }


# How the miss of a model no faster than the original beyond the spread begins (bench/corpus.py tells it from
# an accuracy miss: such a model kept the accuracy, it is only not faster)
SPREAD_MISS = "not faster than"


class Rounds(Protocol):
    """A benchmark row's medians per round (BenchmarkRow), in round order."""

    @property
    def round_p50_ms(self) -> tuple[float, ...]: ...


def round_spread(row: Rounds, base: Rounds | None) -> dict[str, float]:
    """`speedup_low`/`speedup_high`: the lowest and highest of the per-round speedups of a model's row against
    the baseline's row under the same configuration (rounds interleave the models, so each round's ratio is
    taken under the same load); none without a baseline row (the baseline itself) or rounds (older documents)."""
    if base is None or not row.round_p50_ms or len(base.round_p50_ms) != len(row.round_p50_ms):
        return {}
    ratios = [b / r for b, r in zip(base.round_p50_ms, row.round_p50_ms) if r > 0]
    return {"speedup_low": round(min(ratios), 3), "speedup_high": round(max(ratios), 3)}


def beyond_the_spread(candidates: list[Candidate], names: list[str], baseline: str | None) -> None:
    """On a speed objective, a model is chosen over the original (the benchmark's `baseline`, when it is itself
    an eligible candidate under the same configuration) only if it was faster in every round: its lowest
    per-round speedup above 1. A median 1.02x over rounds that ranged 0.95-1.08x is noise, and delivering it
    would make what ships depend on the machine's load."""
    originals = {_config(c) for c in candidates if names[c.model] == baseline and not c.misses}
    for c in candidates:
        low = c.values.get("speedup_low")
        if c.misses or low is None or _config(c) not in originals or low > 1.0:
            continue
        c.misses.append(
            f"{SPREAD_MISS} {baseline} beyond the benchmark's spread: {low:.3g}-"
            f"{c.values['speedup_high']:.3g}x over its rounds (faster in every round needed)"
        )
        c.shortfall = max(c.shortfall, 1.0 - low + 1e-9)


def _config(c: Candidate) -> tuple[tuple[str, Scalar], ...]:
    return tuple(sorted(c.config.items()))
