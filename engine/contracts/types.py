"""The data every layer passes around: data references, stage specs, the resolved recipe, stage jobs and
their outcomes. This module imports nothing from the engine at run time (only for annotations), so any
layer can use it without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from ortflow.engine.contracts.builds import Identity, RunRecord
    from ortflow.engine.contracts.dataset import Dataset, DatasetLoader
    from ortflow.engine.contracts.provenance import DataSource
    from ortflow.engine.contracts.stage import Stage
    from ortflow.engine.leaves.errors import Location
    from ortflow.engine.leaves.json_types import Json
    from ortflow.engine.leaves.yamlsource import SourceMap

SOURCES = ("inputs", "datasets")


class TextEnum(str, Enum):
    """An enum whose members print and serialize as their text (`ran`, not `Status.RAN`)."""

    def __str__(self) -> str:
        return self.value


class Status(TextEnum):
    """What happened to a stage in a run (shown in tables, reports and run summaries as its value)."""

    RAN = "ran"
    CACHED = "cached"
    FAILED = "failed"
    GATE_FAILED = "gate failed"
    SKIPPED = "skipped"
    NOT_RUN = "not run"

    @property
    def succeeded(self) -> bool:
        return self in (Status.RAN, Status.CACHED)


@dataclass(frozen=True)
class Ref:
    """A data reference: `inputs.<name>`, `datasets.<name>` or `<stage>.<output>`."""

    source: str
    name: str

    @property
    def is_source(self) -> bool:
        """True for the recipe's own inputs and datasets, False for a stage's output."""
        return self.source in SOURCES

    def __str__(self) -> str:
        return f"{self.source}.{self.name}"


@dataclass(frozen=True)
class Binding:
    """What one input port of a stage is bound to: its references, and whether the port takes a list (a
    port that takes many receives a list even of one; any other receives its single value)."""

    refs: tuple[Ref, ...]
    many: bool

    @classmethod
    def one(cls, ref: Ref) -> Binding:
        return cls((ref,), False)

    def shaped(self, values: list[Any]) -> Any:
        """`values` (one for each reference) as the stage receives them: the list, or its only item."""
        return list(values) if self.many else values[0]


@dataclass
class StageSpec:
    name: str
    uses: str
    stage_cls: type[Stage]
    params: dict[str, Json]  # validated, defaults filled in
    inputs: dict[str, Binding]
    after: list[str]
    location: Location | None
    # Its own refusal is not the run's failure: a missing execution provider skips it, and a gate that refuses its
    # output (GateFailed) leaves it refused; either way it is dropped from its dependents' list (`many`) ports
    # (engine.run.jobs.without) and they run on the rest.
    optional: bool = False
    template: str = ""  # the stage as written, when this is one instance of its matrix
    axes: dict[str, str] = field(default_factory=dict)  # the matrix values that name this instance
    resources: dict[str, float] = field(
        default_factory=dict
    )  # what a worker must offer to run it (Dask)
    workers: list[str] = field(default_factory=list)  # the workers allowed to run it (Dask)
    target_cpu: str = (
        "native"  # the recipe's `target: {cpu: ...}`: what the target_isa fact stands for
    )
    # A step's (engine.run.steps) labels on ports that take many enter its key: a stage names its per-input
    # results by them (validate_accuracy's candidates), so a step labelled "c01" must never be served to a stage
    # that asks for "int8". A recipe stage's labels are its recipe's stage names and stay out of its key.
    labels_keyed: bool = False

    def refs(self) -> list[Ref]:
        return [ref for binding in self.inputs.values() for ref in binding.refs]


@dataclass(frozen=True)
class InputSpec:
    name: str
    path: Path  # resolved, absolute
    declared: str  # as the user wrote it, for messages


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    loader: str
    loader_cls: type[DatasetLoader]
    params: dict[str, Any]  # validated, defaults filled in; file parameters hold absolute Paths
    location: Location

    def file_paths(self) -> dict[str, Path]:
        return {p: self.params[p] for p in self.loader_cls.file_params if p in self.params}


@dataclass
class Recipe:
    path: Path
    name: str
    inputs: dict[str, InputSpec]
    datasets: dict[str, DatasetSpec]
    stages: dict[str, StageSpec]
    source: SourceMap
    overrides: list[str] = field(default_factory=list)
    matrices: dict[str, list[str]] = field(
        default_factory=dict
    )  # matrix stage as written -> its instance ids
    target_cpu: str = "native"  # `target: {cpu: ...}`: the instruction set the models are built for

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.path)


def lock_path_for(recipe_path: Path) -> Path:
    """`<recipe>.lock` beside the recipe."""
    return recipe_path.with_name(recipe_path.name + ".lock")


@dataclass(frozen=True)
class StageJob:
    """Everything needed to run a stage, with inputs already resolved to digests and paths."""

    spec: StageSpec
    identity: Identity  # what its outputs are made from: its cache key, computed once (engine.run.jobs.identify)
    input_paths: dict[str, Path | list[Path] | Dataset]
    # The float values the lock file records for this key's outputs ({port: values}), where it records any:
    # a stage whose floats vary in their last bits from CPU to CPU keeps the locked ones when they agree.
    pinned_values: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # Per input port, the digests of the datasets its artifacts were made from anywhere upstream (a quantized
    # model: its calibration data), so a stage can tell a check on that same data (StageContext.made_from).
    made_from: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Per input port, per reference: the data the activation ranges baked into that artifact were calibrated on
    # anywhere upstream (the least trusted, when several; None where no ranges were made in this recipe), so
    # `select` never chooses a model quantized with ranges from random feeds (StageContext.calibrated_on).
    calibrated_on: dict[str, tuple[DataSource | None, ...]] = field(default_factory=dict)
    # The same datasets themselves (not part of the key either: the artifacts made from them are), so a check may
    # run on the data a calibration table was made from (StageContext.upstream_datasets).
    upstream_data: dict[str, tuple[Dataset, ...]] = field(default_factory=dict)

    @property
    def input_digests(self) -> Mapping[str, str | list[str]]:
        return self.identity.inputs


def dropped_text(dropped_from: Sequence[str], text: str) -> str:
    """A refused optional stage's result as tables show it: which dependents went on without it, and why."""
    return f"dropped from {', '.join(dropped_from)}: {text}" if dropped_from else text


@dataclass(frozen=True)
class Missing:
    """A stage that cannot start: `ref`, an optional output of an upstream stage, was not produced."""

    ref: Ref


@dataclass
class StageOutcome:
    name: str
    status: Status
    seconds: float = 0.0
    key: str | None = None
    record: RunRecord | None = (
        None  # its run record (run or served from the cache); None if it failed or was skipped
    )
    error: str | None = None
    traceback: str | None = None  # shown with --debug
    printed: str = (
        ""  # the tail of what a failed stage printed (library output), shown with -v and --debug
    )
    out_of_space: bool = False  # the stage failed because a disk filled up (exit code 5, not 1)
    unavailable: bool = (
        False  # skipped by the stage itself: an execution provider it needs is missing here
    )
    refused: bool = False  # failed by the stage's own verdict (a StageError: what is wrong and the fix), not a crash
    # An optional stage that said no by itself (engine.run.jobs.tolerated): shown with its reason, never served
    # downstream, and no failure of the run; `dropped_from`: the dependents that ran without it.
    tolerated: bool = False
    dropped_from: tuple[str, ...] = ()
    # One line the run prints about it: the lock's result served in place of a cached one another CPU rounded
    # otherwise (engine.run.jobs.with_locked_objects).
    note: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status.succeeded


@runtime_checkable
class RunObserver(Protocol):
    """What watches a run as it goes (as Kedro's runner hooks do): the lock writer, the out/ publisher and the
    console each observe it; the run calls them in the order they were given, from the scheduling thread."""

    def stage_started(self, name: str) -> None: ...

    def stage_finished(self, outcome: StageOutcome) -> None: ...

    def run_message(self, message: str) -> None: ...


class QuietObserver:
    """A RunObserver that takes no notice: an observer overrides what it watches."""

    def stage_started(self, name: str) -> None:
        return None

    def stage_finished(self, outcome: StageOutcome) -> None:
        return None

    def run_message(self, message: str) -> None:
        return None
