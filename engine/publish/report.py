"""The run summary: report.json beside the materialised outputs, and report.md / report.html rendered from
it. Stages contribute sections through their metrics outputs: a JSON document with a "report" key holding
{"tables": [{title, columns, rows}], "charts": [{kind: "distribution", title, series: {name: [values]}} or
{kind: "scatter", title, x_label, y_label, points: [{label, x, y, front?, chosen?}]}]}.
What the renderers need beyond that comes from what the stage types declare (Stage.declares), never from their
names: the tables kept out of the terminal, what distribution charts measure, each measure's unit, and the two
per-model measures the speed-against-accuracy chart plots."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeGuard

from ortflow.engine.contracts.declarations import Axis, Declares, Measure, plotted, units
from ortflow.engine.contracts.report_section import report_section
from ortflow.engine.contracts.types import Recipe, StageOutcome
from ortflow.engine.leaves.environment import facts, target_isa
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.secrets import redact_json
from ortflow.engine.publish.headline import find_headline
from ortflow.engine.publish.report_types import (
    AxisJson,
    ChartJson,
    DeclaredJson,
    OutputJson,
    ReportJson,
    SectionJson,
    SectionParts,
    StageEntry,
    TableJson,
)
from ortflow.engine.store import atomic
from ortflow.engine.store.base import Objects
from ortflow.engine.store.hashing import hash_bytes

SHELL_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


def stage_slug(stage: str) -> str:
    """A stage's folder name: the name itself where a shell takes it unquoted, else a short slug of it with a
    hash of the whole name (a matrix variant `int8[per_channel=true,activation_type=QInt8]` becomes
    `int8-per_channel-true-activation_type-QInt8-1f2e3d4c`), so two variants never share a folder. The full
    name is in the folder's marker file and beside the slug in report.json."""
    if SHELL_SAFE.fullmatch(stage):
        return stage
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", stage).strip("-.")[:80].rstrip("-.")
    return f"{readable or 'stage'}-{hash_bytes(stage.encode())[:8]}"


def stage_folder(out_dir: Path, stage: str) -> Path:
    """Where a stage's outputs are published."""
    return out_dir / stage_slug(stage)


@dataclass(frozen=True)
class WrittenReport:
    """report.json's path and the sections stages added to it (redacted, as written), kept so the console prints
    them without reading the file back."""

    path: Path
    sections: list[SectionJson]


def write_report(
    recipe: Recipe,
    out_dir: Path,
    outcomes: dict[str, StageOutcome],
    source_digests: dict[str, str],
    store: Objects,
) -> WrittenReport:
    out_dir.mkdir(parents=True, exist_ok=True)
    stages = [_stage_entry(recipe, out_dir, name, outcome) for name, outcome in outcomes.items()]
    report: ReportJson = {
        "recipe": recipe.name,
        "recipe_path": str(recipe.path),
        "overrides": list(recipe.overrides),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": dict(source_digests),
        "environment": {
            **facts(("onnxruntime", "onnx", "python", "platform", "cpu", "isa")),
            "target_isa": target_isa(recipe.target_cpu),
        },
        "stages": stages,
    }
    declared = {name: spec.stage_cls.declares for name, spec in recipe.stages.items()}
    report["sections"] = _sections(outcomes, store, declared)
    measures = _declared(list(declared.values()))
    report["units"] = measures["units"]
    if "trade_off" in measures:
        report["trade_off"] = measures["trade_off"]
    _add_constraints(report, recipe)
    found = find_headline(report)
    report["headline"] = found.to_json() if found is not None else None
    report = redact_json(report)  # a stage's error or a parameter may hold a URL with credentials
    path = out_dir / "report.json"
    atomic.remove_stale_staging(out_dir)
    atomic.write_text(path, json.dumps(report, indent=2))
    render(report, out_dir)
    return WrittenReport(path, report["sections"])


def _stage_entry(recipe: Recipe, out_dir: Path, name: str, outcome: StageOutcome) -> StageEntry:
    """One stage's entry in report.json's `stages`: how it ended, what it was built from and where its
    outputs were published. A stage that did not finish (no run record) has empty fields, not missing ones.
    Its keys are written in the order they are set here."""
    record, spec = outcome.record, recipe.stages[name]
    entry: StageEntry = {
        "stage": name,
        "folder": stage_slug(name),  # under out/<recipe>/
        "type": spec.uses,
        "status": outcome.status.value,
        "seconds": round(outcome.seconds, 3),
        "build_seconds": record.seconds if record is not None else None,
        "key": outcome.key,
    }
    if spec.template:
        entry["matrix"] = {"stage": spec.template, "axes": dict(spec.axes)}
    # the machine that built or measured it
    entry["ran_on"] = dict(record.ran_on) if record is not None else None
    entry["summary"] = record.summary if record is not None else ""
    entry["metrics"] = dict(record.metrics) if record is not None else {}
    # a verdict's data (engine.contracts.provenance.DataSource as JSON: provenance real/random/unknown, loader,
    # paths, calibration_reused, verified, label), where the stage declared one
    entry["data_source"] = (
        dict(record.data_source) if record is not None and record.data_source is not None else None
    )
    entry["outputs"] = _published(out_dir, name, outcome)
    entry["error"] = outcome.error
    if outcome.tolerated:  # an optional stage's own refusal, which fails nothing
        entry["tolerated"] = True
        entry["dropped_from"] = list(outcome.dropped_from)  # the dependents that went on without it
    return entry


def _published(out_dir: Path, name: str, outcome: StageOutcome) -> dict[str, OutputJson]:
    """Each output of a stage: its store digest, the path it was published at and its size."""
    outputs = outcome.record.outputs if outcome.record is not None else {}
    return {
        port: {
            "digest": out.digest,
            "path": str(stage_folder(out_dir, name) / out.filename),
            "size": out.size,
        }
        for port, out in outputs.items()
    }


def render(report: ReportJson, out_dir: Path) -> None:
    """report.md and a self-contained report.html (inline CSS and SVG, nothing fetched when opened)."""
    from ortflow.engine.publish.report_html import html_report, markdown_report

    atomic.write_text(out_dir / "report.md", markdown_report(report))
    atomic.write_text(out_dir / "report.html", html_report(report))


def _declared(declared: list[Declares]) -> DeclaredJson:
    """What the renderers read from the stage types' declarations: each measure's unit, and the measures the
    speed-against-accuracy chart plots (absent when no stage type declares one for each axis)."""

    def axis(measure: Measure) -> AxisJson:
        return {
            "metric": measure.name,
            "title": measure.axis_title,
            "unit": measure.unit,
            "better": str(getattr(measure.better, "value", measure.better)),
        }

    speed, accuracy = plotted(declared, Axis.SPEED), plotted(declared, Axis.ACCURACY)
    found: DeclaredJson = {"units": dict(units(declared))}
    if speed and accuracy:
        found["trade_off"] = {"x": axis(speed), "y": axis(accuracy)}
    return found


def _add_constraints(report: ReportJson, recipe: Recipe) -> None:
    """The trade-off chart's axes start at the recipe's bound on their measure (a `min:`/`max:` parameter naming
    it, as validate_accuracy's gates and select's constraints do): a 0.0002 difference above a 0.99 bound must not
    fill the whole axis like a cliff. The strictest bound, where several stages name one."""
    trade = report.get("trade_off")
    for axis in (trade["x"], trade["y"]) if trade is not None else ():
        side = "max" if axis["better"] == "lower" else "min"
        metric = axis["metric"]
        bounds: list[float] = []
        for spec in recipe.stages.values():
            limits = spec.params.get(side)
            bound = limits.get(metric) if isinstance(limits, dict) else None
            if isinstance(bound, (int, float)):
                bounds.append(bound)
        if bounds:
            axis["bound"] = min(bounds) if side == "max" else max(bounds)


def _sections(
    outcomes: dict[str, StageOutcome], store: Objects, declared: dict[str, Declares]
) -> list[SectionJson]:
    """Each metrics output's report section (engine.contracts.documents.report_section), in the order the stages ran, with
    what its stage type declares about it."""
    sections: list[SectionJson] = []
    for name, outcome in outcomes.items():
        for out in (outcome.record.outputs if outcome.record is not None else {}).values():
            section = (
                report_section(store.object_path(out.digest)) if out.kind == "metrics" else None
            )
            if section is not None:
                sections.append(
                    {"stage": name, **_annotated(_well_formed(section), declared[name])}
                )
    return sections


def _annotated(section: SectionParts, declares: Declares) -> SectionParts:
    """A section with what its stage type declares about it: tables kept out of the terminal (`terminal: false`),
    the value axis and unit of its distribution charts."""
    for table in section["tables"]:
        if not declares.shown_in_terminal(table["title"]):
            table["terminal"] = False
    for chart in section["charts"]:
        title = chart["title"]
        found = declares.distribution(title) if chart["kind"] == "distribution" else None
        if found is not None:
            chart.setdefault("x_label", found.value)
            chart.setdefault("x_unit", found.unit)
    return section


def _well_formed(section: JsonObject) -> SectionParts:
    """Only the tables and charts a renderer can draw: a plugin's malformed section must not sink a run. The
    plugin's section is JSON as it wrote it; each table and chart kept is checked against its type here."""
    return {
        "tables": [t for t in _list(section.get("tables")) if _is_table(t)],
        "charts": [c for c in _list(section.get("charts")) if _is_chart(c)],
    }


def _list(value: Json) -> list[Json]:
    """A JSON array as it is; anything else (null, an object a plugin wrote by mistake) reads as []."""
    return value if isinstance(value, list) else []


def _is_table(table: Json) -> TypeGuard[TableJson]:
    return (
        isinstance(table, dict)
        and isinstance(table.get("title"), str)
        and isinstance(table.get("columns"), list)
        and isinstance(table.get("rows"), list)
        and all(isinstance(r, list) for r in _list(table["rows"]))
    )


def _is_chart(chart: Json) -> TypeGuard[ChartJson]:
    """A distribution (`series`: lists of numbers by name) or a scatter (`points`: at least one, each with a
    text label and numbers x and y), with a title."""
    if not isinstance(chart, dict) or not isinstance(chart.get("title"), str):
        return False
    kind = chart.get("kind")
    return (kind == "distribution" and _series(chart.get("series"))) or (
        kind == "scatter" and _points(chart.get("points"))
    )


def _series(series: Json) -> bool:
    return isinstance(series, dict) and all(
        isinstance(v, list) and all(isinstance(x, (int, float)) for x in v) for v in series.values()
    )


def _points(points: Json) -> bool:
    return (
        isinstance(points, list)
        and bool(points)
        and all(
            isinstance(p, dict)
            and isinstance(p.get("label"), str)
            and all(
                isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool)
                for k in ("x", "y")
            )
            for p in points
        )
    )
