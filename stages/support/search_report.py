"""quantize_search's section of the run report: every candidate, the node rankings, speed against margin."""

from __future__ import annotations

from typing import Any, Callable


def search_report(candidates: list[Any], rankings: dict[str, list[tuple[str, float | None]]], chosen: Any,
                  front: list[Any], describe: Callable[..., str]) -> dict[str, Any]:
    metrics = sorted({k for c in candidates for k in c.values})
    shown = [c for c in candidates if c.role != "probe" or c.speedup]  # probes: in the node rankings
    rows = [[c.id + (" (chosen)" if c is chosen else ""), c.role, describe(c, names=False),
             ", ".join(c.excluded), *[c.values.get(m, "") for m in metrics],
             {True: "yes", False: "no", None: ""}[c.passed], f"{c.speedup:.2f}x" if c.speedup else "",
             "yes" if c in front else "", c.note] for c in shown]
    tables = [{"title": "Candidates (probes keeping one node float are in the node rankings)", "rows": rows,
               "columns": ["id", "role", "settings", "kept float", *metrics, "meets target", "speedup", "Pareto", "note"]}]
    for base, ranked in rankings.items():
        tables.append({"title": f"Nodes by harm when quantized, from {base}",
                       "columns": ["node", "accuracy margin when it alone is kept float"],
                       "rows": [[n, v] for n, v in ranked]})  # exact names: what nodes_to_exclude takes
    points = [{"label": f"{c.id} {describe(c)}", "x": c.speedup, "y": c.score, "front": c in front,
               "chosen": c is chosen} for c in candidates if c.speedup and c.score is not None]
    chart = {"kind": "scatter", "title": "Candidates: speed against accuracy margin", "points": points,
             "x_label": "speedup vs reference (p50)", "y_label": "accuracy margin over the gates (>= 0 meets them)"}
    return {"tables": tables, "charts": [chart]}
