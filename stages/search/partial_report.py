"""What quantize_partial hands back: the chosen model, a document of every candidate tried, and a summary naming
what stayed float and why (each node's SQNR drop in the whole-model INT8, where the error entered)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortflow.api import Json, StageResult
from ortflow.stages.search.candidates import Candidate, shown_values
from ortflow.stages.search.localisation import Culprit

NAMED = 4  # kept-float nodes named in the summary (all of them are in the document)


@dataclass(frozen=True)
class PartialResult:
    """The chosen candidate and why its float nodes are float (their SQNR drop in the whole-model INT8)."""

    chosen: Candidate
    culprits: list[Culprit]
    whole: Candidate


def deliver(search: Any, result: PartialResult, metrics: dict[str, Json]) -> StageResult:
    chosen = result.chosen
    assert chosen.model is not None
    write_document(search, chosen, metrics)
    source = Path(str(chosen.model.path))
    if source.is_dir():  # a model over 2 GB: a folder with its external data
        shutil.copytree(source, search.ctx.output_path("model"))
    else:
        shutil.copyfile(source, search.ctx.output_path("model"))
    return StageResult(
        summary=summary(search, result), metrics=metrics, data_source=search.data_source
    )


def write_document(search: Any, chosen: Candidate | None, metrics: dict[str, Json]) -> None:
    """partial.json: every candidate tried (how many nodes it kept float, its values, its verdict), the nodes the
    chosen one keeps float with their SQNR drop, and why the search stopped early where it did."""
    document = {
        "chosen": chosen.id if chosen is not None else None,
        "kept_float": metrics.get("kept_float", []),
        "stopped_early": search.budget.stopped or None,
        "candidates": [
            {
                "id": c.id,
                "kept_float": len(c.excluded),
                "values": c.values,
                "passed": c.passed,
                "note": c.note or None,
            }
            for c in search.candidates
        ],
    }
    search.ctx.output_path("search").write_text(json.dumps(document, indent=2), encoding="utf-8")


def summary(search: Any, result: PartialResult) -> str:
    """E.g. "c04: 3 of 120 nodes kept float (Conv_0: SQNR -23.1 dB where whole-model INT8's error enters, ...);
    acc 0.9900 meets the target (whole-model INT8: acc 0.6200); 5 candidates"."""
    chosen, whole = result.chosen, result.whole
    tried = f"{len(search.candidates)} candidates"
    if search.budget.out_of_time:
        tried += f"; the time budget cut the search ({search.budget.stopped}): a faster machine may go further"
    elif search.budget.stopped:
        tried += f"; {search.budget.stopped}"
    named = ", ".join(
        f"{search._short(c.node)} ({c.op_type}, SQNR drops {c.sqnr_drop_db:.1f} dB across it)"
        for c in result.culprits[:NAMED]
    )
    more = f" and {len(result.culprits) - NAMED} more" if len(result.culprits) > NAMED else ""
    return (
        f"{chosen.id}: {len(result.culprits)} nodes kept float ({len(chosen.quantized_nodes)} quantized), "
        "where whole-model INT8's "
        f"error enters: {named}{more}; {shown_values(chosen)} meets the target (whole-model INT8: "
        f"{shown_values(whole)}; {tried})"
    )
