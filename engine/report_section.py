"""The shape of a stage's section of the run report (engine.publish.report), which every result document
(engine.documents, engine.benchmark_results) and any plugin's metrics output carries under "report"."""

from __future__ import annotations

from typing import TypedDict

from ortflow.engine.json_types import Json


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
