"""quantize_search's candidates: what each one is, which are on the Pareto front, and the search's section
of the run report (every candidate, the node rankings, speed against accuracy margin)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from ortflow.api import Artifact, Json
from ortflow.stages.search.pareto import pareto_front

if TYPE_CHECKING:
    from ortflow.api import ReportSection, Table


@dataclass
class Candidate:
    id: str
    family: str
    start: int  # index into the `models` input
    calibration: int | None  # index into the `calibrations` input
    knobs: dict[str, Json]  # the searched parameters' values
    params: dict[str, Json]  # the quantize step's parameters, exclusions included
    excluded: list[str] = field(default_factory=list)  # nodes the search kept in float
    role: str = (
        "grid"  # grid, probe (one node kept float) or repair (the most harmful nodes kept float)
    )
    model: Artifact | None = None
    quantized_nodes: list[str] = field(default_factory=list)
    values: dict[str, float] = field(
        default_factory=dict
    )  # each gated metric, worst over the gated outputs
    score: float | None = None  # the smallest relative margin over the gates: >= 0 meets them all
    passed: bool | None = None
    speedup: float | None = None
    p50_ms: float | None = None
    note: str = ""
    gate_failed: str | None = (
        None  # the quantize step's own gate refused it (a recipe stage would be dropped)
    )


def kept_float(params: Mapping[str, Json], nodes: list[str]) -> dict[str, Json]:
    """A quantize step's parameters with `nodes` added to its nodes_to_exclude (sorted, each once)."""
    given = params.get("nodes_to_exclude")
    excluded = {str(node) for node in given} if isinstance(given, list) else set()
    merged: list[Json] = [*sorted(excluded | set(nodes))]
    return {**params, "nodes_to_exclude": merged}


class _NotBuilt(TypedDict):
    family: str
    knobs: dict[str, Json]
    why: str


class NotBuilt(_NotBuilt, total=False):
    """A grid combination the search did not build, and why (search.json's `not_built`)."""

    model: str  # when it was dominated: the float model it would have been made from


def search_report(
    candidates: list[Any],
    rankings: dict[str, list[tuple[str, float | None]]],
    chosen: Any,
    front: list[Any],
    describe: Callable[..., str],
) -> ReportSection:
    tables = [_candidates_table(candidates, chosen, front, describe)]
    tables += _ranking_tables(rankings)
    return {"tables": tables, "charts": [_margin_chart(candidates, chosen, front, describe)]}


def _candidates_table(
    candidates: list[Any], chosen: Any, front: list[Any], describe: Callable[..., str]
) -> Table:
    """Every candidate with its gated metrics; probes only where they were timed (the rest are ranked below)."""
    metrics = sorted({k for c in candidates for k in c.values})
    shown = [
        c for c in candidates if c.role != "probe" or c.speedup
    ]  # probes: in the node rankings
    rows: list[list[Json]] = [
        [
            c.id + (" (chosen)" if c is chosen else ""),
            c.role,
            describe(c, names=False),
            ", ".join(c.excluded),
            *[c.values.get(m, "") for m in metrics],
            {True: "yes", False: "no", None: ""}[c.passed],
            f"{c.speedup:.2f}x" if c.speedup else "",
            "yes" if c in front else "",
            c.note,
        ]
        for c in shown
    ]
    return {
        "title": "Candidates (probes keeping one node float are in the node rankings)",
        "rows": rows,
        "columns": [
            "id",
            "role",
            "settings",
            "kept float",
            *metrics,
            "meets target",
            "speedup",
            "Pareto",
            "note",
        ],
    }


def _ranking_tables(rankings: dict[str, list[tuple[str, float | None]]]) -> list[Table]:
    """Per repaired base, its nodes by harm, under their exact names: what nodes_to_exclude takes."""
    return [
        {
            "title": f"Nodes by harm when quantized, from {base}",
            "columns": ["node", "accuracy margin when it alone is kept float"],
            "rows": [[n, v] for n, v in ranked],
        }
        for base, ranked in rankings.items()
    ]


def _margin_chart(
    candidates: list[Any], chosen: Any, front: list[Any], describe: Callable[..., str]
) -> dict[str, Json]:
    points: list[Json] = [
        {
            "label": f"{c.id} {describe(c)}",
            "x": c.speedup,
            "y": c.score,
            "front": c in front,
            "chosen": c is chosen,
        }
        for c in candidates
        if c.speedup and c.score is not None
    ]
    return {
        "kind": "scatter",
        "title": "Candidates: speed against accuracy margin",
        "points": points,
        "x_label": "speedup vs reference (p50)",
        "y_label": "accuracy margin over the gates (>= 0 meets them)",
        "x_unit": "x",
        "y_unit": "",
    }


def pareto(candidates: list[Candidate]) -> list[Candidate]:
    """Those no other candidate beats on both speed and accuracy margin."""
    on_front = pareto_front([(c.speedup or 0, c.score or 0) for c in candidates])
    return [c for c, front in zip(candidates, on_front) if front]


def shown_values(c: Candidate) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in c.values.items())


class CandidateRow(TypedDict):
    """One candidate as search.json records it."""

    id: str
    role: str
    family: str
    model: str
    calibration: str | None
    knobs: dict[str, Json]
    kept_float: list[str]
    quantized_nodes: int
    values: dict[str, float]
    meets_target: bool | None
    speedup: float | None
    p50_ms: float | None
    pareto: bool
    note: str


def candidate_row(c: Candidate, on_front: bool, model: str, table: str | None) -> CandidateRow:
    """One candidate in search.json: `model` and `table` name its float model and calibration table."""
    return {
        "id": c.id,
        "role": c.role,
        "family": c.family,
        "model": model,
        "calibration": table,
        "knobs": c.knobs,
        "kept_float": c.excluded,
        "quantized_nodes": len(c.quantized_nodes),
        "values": c.values,
        "meets_target": c.passed,
        "speedup": c.speedup,
        "p50_ms": c.p50_ms,
        "pareto": on_front,
        "note": c.note,
    }
