"""The result documents stages write as metrics outputs and other stages, the reports and `engine optimize`
read: a benchmark's results, validate_accuracy's results and select's selection. Each is a dataclass written
and read only here, checked against its JSON Schema (schemas/*.schema.json, compiled once) both ways, so a
reader never re-parses rows by key and a writer cannot drift from what readers expect. The JSON is the same,
key for key and in the same order, as the stages wrote before these classes existed: their digests are in
shipped lock files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TypeVar, Union, cast

# The benchmark document and the report section's shape have modules of their own; their names are
# imported from here too (ortflow.api does), hence the `X as X` re-exports.
from ortflow.engine.contracts.benchmark_results import BENCHMARK_CONFIG as BENCHMARK_CONFIG
from ortflow.engine.contracts.benchmark_results import BenchmarkResults as BenchmarkResults
from ortflow.engine.contracts.benchmark_results import BenchmarkRow as BenchmarkRow
from ortflow.engine.contracts.benchmark_results import Latency as Latency
from ortflow.engine.contracts.benchmark_results import MachineLoad as MachineLoad
from ortflow.engine.contracts.benchmark_results import Placement as Placement
from ortflow.engine.contracts.benchmark_results import Profile as Profile
from ortflow.engine.contracts.benchmark_results import SessionSettings as SessionSettings
from ortflow.engine.contracts.benchmark_results import with_speedups as with_speedups
from ortflow.engine.contracts.json_values import (
    flag,
    integer,
    json_value,
    number_map,
    scalar_map,
    text_map,
    texts,
)
from ortflow.engine.contracts.metric import Better
from ortflow.engine.contracts.provenance import DataSource
from ortflow.engine.contracts.report_section import ReportSection as ReportSection
from ortflow.engine.contracts.report_section import Table as Table
from ortflow.engine.contracts.report_section import report_section as report_section
from ortflow.engine.leaves import schema_check
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.leaves.json_types import Json, Scalar, obj, objects, text


@dataclass(frozen=True)
class Bounds:
    """Gates or constraints: metric -> lowest (`min`) or highest (`max`) acceptable value."""

    min: dict[str, float] = field(default_factory=dict)
    max: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, dict[str, float]]:
        return {"min": self.min, "max": self.max}

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> Bounds:
        return cls(number_map(data.get("min")), number_map(data.get("max")))


# -- accuracy -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceValues:
    """The reference against itself: what select counts for it when it is one of the models to choose from."""

    name: str
    values: dict[str, float]


@dataclass(frozen=True)
class AccuracyResults:
    """accuracy.json: every value per model and output or metric group (`results`), each metric's counted
    value (`values`: its worst over the gated outputs) and where it was counted, which way each is better,
    the gates and their misses, and the data the verdict rests on."""

    samples: int
    results: dict[
        str, dict[str, dict[str, Json]]
    ]  # model -> output or metric group -> metric -> value
    values: dict[str, dict[str, float]]
    counted_at: dict[str, dict[str, str]]
    better: dict[str, Better]
    reference_labelled: dict[str, float] | None
    gates: Bounds
    failures: list[str]
    data: DataSource | None
    report: ReportSection
    reference: ReferenceValues | None = None

    SCHEMA = "accuracy_results"

    def model_values(self, name: str) -> dict[str, float]:
        """A model's counted values: a candidate's, or the reference's own when `name` is the reference."""
        found = self.values.get(name)
        if not found and self.reference is not None and self.reference.name == name:
            found = self.reference.values
        return {
            m: v
            for m, v in (found or {}).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }

    def to_json(self) -> dict[str, Json]:
        document: dict[str, Json] = {
            "samples": self.samples,
            "results": json_value(self.results),
            "values": json_value(self.values),
            "counted_at": json_value(self.counted_at),
            "better": {m: b.value for m, b in self.better.items()},
            "reference_labelled": json_value(self.reference_labelled),
            "gates": json_value(self.gates.to_json()),
            "failures": list(self.failures),
        }
        if self.data is not None:
            document["data"] = json_value(self.data.to_json())
        document["report"] = json_value(self.report)
        if self.reference is not None:
            document["reference"] = {
                "name": self.reference.name,
                "values": json_value(self.reference.values),
            }
        return document

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> AccuracyResults:
        # read() checked `data` against the schema: each part has the shape its field names
        reference = data.get("reference")
        labelled = data.get("reference_labelled")
        return cls(
            integer(data.get("samples", 0)),
            cast("dict[str, dict[str, dict[str, Json]]]", data["results"]),
            {name: number_map(values) for name, values in obj(data["values"]).items()},
            {name: text_map(where) for name, where in obj(data.get("counted_at")).items()},
            {m: Better(text(b)) for m, b in obj(data.get("better")).items()},
            number_map(labelled) if isinstance(labelled, dict) else None,
            Bounds.from_json(obj(data.get("gates"))),
            texts(data.get("failures")),
            DataSource.from_json(data.get("data")),
            cast(ReportSection, obj(data.get("report"))),
            ReferenceValues(text(reference["name"]), number_map(reference["values"]))
            if isinstance(reference, dict)
            else None,
        )


# -- selection ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectionCandidate:
    id: str
    model: str  # the label of its model among select's `models`
    config: dict[str, Scalar]  # the benchmark settings that vary across candidates
    values: dict[str, float]
    meets_constraints: bool
    misses: list[str]
    pareto: bool
    chosen: bool
    session: SessionSettings | None = (
        None  # the session its timings came from: what reproduces them
    )
    # the data its activation ranges were calibrated on upstream (None: no ranges made in the recipe); a model
    # whose ranges came from anything but real data is never chosen
    calibrated_on: DataSource | None = None

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id,
            "model": self.model,
            "config": json_value(self.config),
            "values": json_value(self.values),
            "meets_constraints": self.meets_constraints,
            "misses": list(self.misses),
            "pareto": self.pareto,
            "chosen": self.chosen,
            **({"session": self.session.to_json()} if self.session is not None else {}),
            **(
                {"calibrated_on": json_value(self.calibrated_on.to_json())}
                if self.calibrated_on is not None
                else {}
            ),
        }

    @classmethod
    def from_json(cls, row: dict[str, Json]) -> SelectionCandidate:
        session = row.get("session")
        return cls(
            text(row["id"]),
            text(row["model"]),
            scalar_map(row["config"]),
            number_map(row["values"]),
            flag(row["meets_constraints"]),
            texts(row["misses"]),
            flag(row["pareto"]),
            flag(row["chosen"]),
            SessionSettings.from_json(obj(session)) if session else None,
            DataSource.from_json(row.get("calibrated_on")),
        )


@dataclass(frozen=True)
class Selection:
    """selection.json: the objective, the constraints, every candidate with its metrics and verdict, the one
    chosen (None when none qualifies) and the data its accuracy was measured on."""

    goal: str  # minimize or maximize
    objective: str
    constraints: Bounds
    data: DataSource | None
    chosen: str | None
    candidates: list[SelectionCandidate]
    report: ReportSection

    SCHEMA = "selection"

    def chosen_candidate(self) -> SelectionCandidate | None:
        return next((c for c in self.candidates if c.chosen), None)

    def candidate(self, model: str) -> SelectionCandidate | None:
        """The first candidate of the model labelled `model`."""
        return next((c for c in self.candidates if c.model == model), None)

    def to_json(self) -> dict[str, Json]:
        return {
            "objective": {self.goal: self.objective},
            "constraints": json_value(self.constraints.to_json()),
            "data": json_value(self.data.to_json()) if self.data is not None else None,
            "chosen": self.chosen,
            "candidates": [c.to_json() for c in self.candidates],
            "report": json_value(self.report),
        }

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> Selection:
        ((goal, objective),) = (obj(data.get("objective")) or {"minimize": "p50_ms"}).items()
        chosen = data.get("chosen")
        return cls(
            goal,
            text(objective),
            Bounds.from_json(obj(data.get("constraints"))),
            DataSource.from_json(data.get("data")),
            chosen if isinstance(chosen, str) else None,
            [SelectionCandidate.from_json(c) for c in objects(data["candidates"])],
            cast(ReportSection, obj(data.get("report"))),  # read() checked it against the schema
        )


# -- reading and writing --------------------------------------------------------------------------------

Document = Union[BenchmarkResults, AccuracyResults, Selection]
D = TypeVar("D", BenchmarkResults, AccuracyResults, Selection)
WHAT = {
    "benchmark_results": "a benchmark stage's results",
    "accuracy_results": "a validate_accuracy stage's results",
    "selection": "a select stage's selection",
}


def write(path: Path, document: Document) -> None:
    """The document as its stage writes it (indented JSON; numpy scalars as floats), checked first."""
    data = document.to_json()
    problem = _problem(document.SCHEMA, data)
    if problem:
        raise ValueError(
            f"{type(document).__name__} does not match schemas/{document.SCHEMA}.schema.json: {problem}"
        )
    path.write_text(json.dumps(data, indent=2, default=float), encoding="utf-8")


def read(path: Path | str, kind: type[D]) -> D:
    """The document at `path`, checked against its schema: a file that is not one says what it is and what to
    give instead (e.g. an accuracy.json from a validate_accuracy before version 3: run it again)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StageError(
            f"{path}: not a results document ({exc}) — give {WHAT[kind.SCHEMA]}"
        ) from None
    problem = _problem(kind.SCHEMA, data)
    if problem:
        raise StageError(
            f"{path}: not {WHAT[kind.SCHEMA]} ({problem}) — give {WHAT[kind.SCHEMA]}, re-run by "
            "`engine run` if it was written by an older version"
        )
    return kind.from_json(data)


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Json]:
    found = resources.files("ortflow.schemas").joinpath(f"{name}.schema.json")
    return obj(json.loads(found.read_text(encoding="utf-8")))


def _problem(name: str, data: object) -> str:
    """What is wrong with `data` as a document of schema `name` ("" when nothing)."""
    return schema_check.problem(name, data) or ""
