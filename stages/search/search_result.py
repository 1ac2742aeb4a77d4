"""What a quantize_search run hands back: the search document (every candidate, the node rankings, the Pareto
front, the report's tables), the chosen model, and, when none met the gates, why and what to change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ortflow.api import GateFailed, Json, StageError, StageResult
from ortflow.stages.search.candidates import candidate_row, pareto, search_report, shown_values


def finish(search: Any) -> StageResult:
    """The search document and report, the chosen model copied to `model`; GateFailed when none was chosen."""
    chosen = search.best()
    front = pareto([c for c in search.candidates if c.speedup and c.score is not None])
    target = search.accuracy
    document = {
        "gates": {"min": target.get("min", {}), "max": target.get("max", {})},
        "chosen": chosen.id if chosen else None,
        "stopped_early": search.budget.stopped or None,
        "not_built": search.skipped,
        "candidates": [
            candidate_row(c, c in front, search._model_name(c.start), search._table_or_none(c))
            for c in search.candidates
        ],
        "node_ranking": {
            base: [{"node": n, "margin_when_kept_float": v} for n, v in ranked]
            for base, ranked in search.rankings.items()
        },
        "culprits": search.culprits,  # by quantization_debug: the order the probes went in
        "report": search_report(
            search.candidates, search.rankings, chosen, front, search._describe
        ),
    }
    search.ctx.output_path("search").write_text(json.dumps(document, indent=2), encoding="utf-8")
    tried = f"{len(search.candidates)} candidates"
    if search.budget.stopped:
        tried += f"; stopped early: {search.budget.stopped}"
    metrics: dict[str, Json] = {
        "candidates": len(search.candidates),
        "pareto": [c.id for c in front],
    }
    if chosen is None:
        _none_chosen(search, tried, metrics)
    assert chosen is not None and chosen.model is not None
    if Path(chosen.model.path).is_dir():  # a model over 2 GB: a folder with its external data
        shutil.copytree(chosen.model.path, search.ctx.output_path("model"))
    else:
        shutil.copyfile(chosen.model.path, search.ctx.output_path("model"))
    metrics.update({"chosen": chosen.id, "chosen_speedup": chosen.speedup})
    metrics.update({f"chosen_{k}": v for k, v in chosen.values.items()})
    summary = (
        f"{chosen.id} {search._describe(chosen)}: {shown_values(chosen)}, "
        f"{chosen.speedup:.2f}x vs reference ({tried})"
    )
    return StageResult(summary=summary, metrics=metrics, data_source=search.data_source)


def _none_chosen(search: Any, tried: str, metrics: dict[str, Json]) -> None:
    """No candidate met the gates: say why (out of time, or the closest one) and what to change."""
    if search.budget.out_of_time:
        raise StageError(
            f"no candidate met the gates before {search.budget.stopped} ({len(search.candidates)} candidates) — "
            "run again to go on from the cached candidates, or raise `seconds`"
        )
    scored = [c for c in search.candidates if c.score is not None]
    closest = max(scored, key=lambda c: c.score or 0, default=None)
    hint = ""
    if closest:
        hint = f"; closest {closest.id} {search._describe(closest)}: {shown_values(closest)}"
    raise GateFailed(
        f"no candidate met the gates ({tried}){hint} — widen the search (families, "
        "dynamic/static choices, max_excluded, repair) or relax the target",
        metrics=metrics,
        data_source=search.data_source,
    )
