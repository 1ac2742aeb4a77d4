"""The shape of a stage's section of the run report (engine.publish.report), which every result document
(engine.contracts.documents, engine.contracts.benchmark_results) and any plugin's metrics output carries under "report"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from ortflow.engine.leaves.json_types import Json, JsonObject


class _Table(TypedDict):
    title: str
    columns: list[str]
    rows: list[list[Json]]


Table = _Table


class ReportSection(TypedDict, total=False):
    """A stage's section of the run report: {"tables": [...], "charts": [...]} (engine.publish.report)."""

    tables: list[Table]
    charts: list[
        dict[str, Json]
    ]  # {kind: distribution | scatter, title, ...}: report.py keeps what it can draw


def report_section(path: Path | str) -> JsonObject | None:
    """The `report` section of any metrics document (a plugin's too), or None: the run report draws it. Here,
    not in engine.contracts.documents, so that writing a report does not import the typed documents. A plugin's
    document is unchecked JSON, so this is a JSON object, not a ReportSection: report.py's _well_formed keeps
    the tables and charts it can draw."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    section = data.get("report") if isinstance(data, dict) else None
    return section if isinstance(section, dict) else None
