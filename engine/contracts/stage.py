"""The contract between the engine and a stage. Stages know nothing about the scheduler or the cache."""

from __future__ import annotations

import builtins
import json
import time
import warnings
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Mapping, Protocol, Sequence, TypeVar, Union

from ortflow.engine.contracts.declarations import NOTHING, Declares
from ortflow.engine.contracts.params import settings_of
from ortflow.engine.leaves.json_types import Json, JsonObject, Params

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import Dataset
    from ortflow.engine.contracts.metric import Better, KnownMetrics
    from ortflow.engine.contracts.provenance import DataSource

T = TypeVar("T")


class ArtifactKind(str, Enum):
    ONNX_MODEL = "onnx_model"
    CALIBRATION_TABLE = "calibration_table"
    METRICS = "metrics"  # a JSON document
    DATASET = "dataset"
    DIRECTORY = "directory"
    FILE = "file"


@dataclass(frozen=True)
class Port:
    """A named input or output of a stage type."""

    name: str
    kind: ArtifactKind
    description: str
    filename: str | None = None  # outputs: the name the stage writes under its output folder
    many: bool = False  # inputs: takes a list of references
    optional: bool = False


PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class Artifact:
    """A piece of data a step can take as input: its content digest and where to read it (a Path, or a
    Dataset for a `datasets.<name>` input)."""

    digest: str
    path: Path | Dataset


# What StageContext.inputs holds per port: a file or folder, a list of them for a port that takes many (a
# list even of one: `many` is normalised when the recipe is validated and when a step is built), or a Dataset.
InputValue = Union[Path, "Dataset", list[Path]]
Labels = Union[
    str, list[str]
]  # an input's reference(s) as written, or its digest(s): one, or one per item


@dataclass
class StepResult:
    """What a step produced: its outputs, each readable where its Artifact points, and the verdict of a gate of its
    own that refused them (a quantizer's sanity check), which a recipe stage alike would have been dropped for."""

    outputs: dict[str, Artifact]
    gate_failed: str | None = None

    def path(self, port: str) -> Path:
        """Where an output lies: e.g. to read a results document with ortflow.api.read_document."""
        found = self.outputs[port].path
        if isinstance(found, (Path, str)):  # a step's outputs are files, never datasets
            return Path(found)
        raise TypeError(f"output '{port}' is a dataset, not a file")

    def document(self, port: str) -> Json:
        """A metrics output, parsed (a results document: read it typed with ortflow.api.read_document)."""
        found: Json = json.loads(self.path(port).read_text(encoding="utf-8"))
        return found


class Steps(Protocol):
    """Runs other registered stage types as cached sub-stages of the running stage (see engine.run.steps)."""

    def stage_type(self, uses: str) -> type[Stage]: ...

    def run(
        self,
        uses: str,
        params: Mapping[str, Json],
        inputs: dict[str, Artifact | list[Artifact]],
        labels: dict[str, Labels] | None = None,
    ) -> StepResult: ...


@dataclass
class StageContext:
    """What a stage receives: resolved parameters, input files, and where to write its outputs."""

    stage_name: str
    params: Params
    # What each port holds (a port that takes many holds a list, even of one); read through path/paths/
    # dataset/artifact(s), which say what a port holds. `inputs`, the old way to read it, is deprecated.
    _inputs: dict[str, InputValue]
    output_dir: Path
    outputs: dict[str, Port]
    scratch: (
        Path  # a private folder for intermediate files, removed after the stage (never the outputs)
    )
    log: Callable[[str], None] = print
    references: dict[str, Labels] = field(
        default_factory=dict
    )  # each input as written, e.g. "opt.model"
    digests: dict[str, Labels] = field(
        default_factory=dict
    )  # each input's content digest (or list of them)
    steps: Steps | None = None  # run other stage types as cached sub-stages
    env: dict[str, str] = field(
        default_factory=dict
    )  # the environment facts in its cache key (env_facts)
    pinned: dict[str, tuple[float, ...]] = field(default_factory=dict)  # see pinned_values
    # per input port, the digests of the datasets its artifacts were made from upstream (not part of the key:
    # the artifacts' own digests are); validate_accuracy compares its data's digest with its candidates'
    made_from: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # per input port, per reference: the data the activation ranges baked into that model were calibrated on
    # upstream (None: no ranges made in this recipe; see calibration_data)
    calibrated_on: dict[str, tuple[DataSource | None, ...]] = field(default_factory=dict)
    # per input port, those datasets themselves (see upstream_datasets)
    upstream_data: dict[str, tuple[Dataset, ...]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    _said: float = 0.0  # when progress was last reported

    @property
    def inputs(self) -> dict[str, InputValue]:
        """Deprecated (kept for plugins until the next release): each port's value, which does not say what
        it holds. Reading it warns (DeprecationWarning) so a plugin learns of it before it goes."""
        warnings.warn(
            "StageContext.inputs is deprecated: read a port with ctx.path, ctx.paths, ctx.dataset, "
            "ctx.artifact(s) or ctx.has (docs/plugins.md)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._inputs

    def progress(self, done: int, total: int | None, what: str) -> None:
        """Report progress of long work (`32/64 samples`): a line every few seconds, none for quick work,
        so a two-minute calibration is never silent and a two-second one stays quiet."""
        now = time.monotonic()
        finished = total is not None and done >= total
        if now - self.started < PROGRESS_EVERY_S or (
            now - self._said < PROGRESS_EVERY_S and not finished
        ):
            return
        self._said = now
        count = f"{done}/{total}" if total is not None else str(done)
        self.log(f"{self.stage_name}: {count} {what} ({now - self.started:.0f} s)")

    # -- typed inputs: what a port holds, checked against what the stage asks for ---------------------------

    def has(self, port: str) -> bool:
        """Whether an optional input was given."""
        return port in self._inputs

    def path(self, port: str) -> Path:
        """The file or folder on a port that takes one."""
        value = self._one(port)
        if isinstance(value, (Path, str)):
            return Path(value)
        raise TypeError(
            f"input '{port}' of {self.stage_name} is a dataset, not a file — use ctx.dataset('{port}')"
        )

    def paths(self, port: str) -> tuple[Path, ...]:
        """The files or folders on a port that takes many (none for an optional one not given)."""
        return tuple(self._file(port, a) for a in self.artifacts(port))

    def dataset(self, port: str) -> Dataset:
        """The dataset on a port of kind dataset."""
        value = self._one(port)
        if isinstance(value, (Path, str)):
            raise TypeError(
                f"input '{port}' of {self.stage_name} is a file, not a dataset — use ctx.path('{port}')"
            )
        return value

    def upstream_datasets(self, port: str) -> tuple[Dataset, ...]:
        """The datasets the artifacts on `port` were made from upstream (a calibration table: the data its
        calibrate stage read), to check a result on the data it was made from without taking that data as an
        input: they are not part of the stage's key (the artifacts made from them are), and nothing is copied."""
        return self.upstream_data.get(port, ())

    def artifact(self, port: str) -> Artifact:
        """The input on a port that takes one, as an Artifact (its digest and where to read it) to hand to a step."""
        value, digest = self._inputs[port], self.digests[port]
        if isinstance(value, list):  # the old shape: a list for a port that takes many
            warnings.warn(
                f"ctx.artifact('{port}') on a port that takes many is deprecated — use ctx.artifacts('{port}')",
                DeprecationWarning,
                stacklevel=2,
            )
            return [Artifact(d, v) for d, v in zip(digest, value)]  # type: ignore[return-value]
        return Artifact(str(digest), value)

    def artifacts(self, port: str) -> tuple[Artifact, ...]:
        """The inputs on a port that takes many, in the recipe's order (none for an optional one not given)."""
        if port not in self._inputs:
            return ()
        value, digest = self._inputs[port], self.digests[port]
        if not isinstance(value, list) or not isinstance(digest, list):
            raise TypeError(
                f"input '{port}' of {self.stage_name} takes one reference — use ctx.artifact('{port}')"
            )
        return tuple(Artifact(d, v) for d, v in zip(digest, value))

    def _file(self, port: str, artifact: Artifact) -> Path:
        """One of a port's files (a port that takes many holds files, never datasets)."""
        if isinstance(artifact.path, (Path, str)):
            return Path(artifact.path)
        raise TypeError(f"input '{port}' of {self.stage_name} holds a dataset, not files")

    def _one(self, port: str) -> Path | Dataset:
        value = self._inputs[port]
        if isinstance(value, list):
            raise TypeError(
                f"input '{port}' of {self.stage_name} takes many references — use ctx.paths('{port}')"
            )
        return value

    def label(self, port: str, index: int | None = None) -> str:
        """A readable name for an input: the stage it came from, e.g. "opt" for "opt.model"."""
        ref = self.references.get(port)
        text = ref[index] if isinstance(ref, list) and index is not None else ref
        if not isinstance(text, str):
            return port if index is None else f"{port}[{index}]"
        source, _, name = text.rpartition(".")
        return name if source in ("inputs", "datasets") else source

    def labels(self, port: str) -> list[str]:
        """Readable names for the inputs of a port that takes several, made unique (`x`, `x#2`) so stages that
        report per model (benchmark, validate_accuracy, select) name the same input the same way."""
        seen: dict[str, int] = {}
        names = []
        value = self._inputs[port]
        for index in range(len(value) if isinstance(value, list) else 1):
            name = self.label(port, index)
            seen[name] = seen.get(name, 0) + 1
            names.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
        return names

    def calibration_data(self, port: str) -> list[DataSource | None]:
        """Per input of `port`, the data the activation ranges baked into it were calibrated on upstream in
        this recipe (a table given as a recipe input: unknown data), or None where no ranges were made here
        (a float model, dynamic INT8, or a model quantized before it came in). A choice among models reads it:
        ranges from random feeds fit noise, not the model's inputs, however well they score on noise."""
        given = self.calibrated_on.get(port, ())
        value = self._inputs.get(port)
        count = len(value) if isinstance(value, list) else 1
        return [given[i] if i < len(given) else None for i in range(count)]

    def settings(self, cls: type[T]) -> T:
        """The parameters as the stage's settings dataclass (Stage.settings), read by attribute, typed."""
        # a plain copy of them: ctx.params, a KeyedParams, warns when read by key
        return settings_of(cls, dict(self.params))

    def pinned_values(self, port: str) -> tuple[float, ...] | None:
        """The float values the lock file records for output `port` under this very cache key (what the stage
        returned as StageResult.values when the lock was written, maybe on another CPU), or None. A stage
        whose floats differ in their last bits from CPU to CPU keeps these when its own agree within its
        stated tolerance, so the same inputs give the same bytes, and the same lock file, everywhere."""
        return self.pinned.get(port)

    def locked_values(self, port: str) -> tuple[float, ...] | None:
        """Deprecated (one release): the old name of pinned_values."""
        import warnings

        warnings.warn(
            "StageContext.locked_values is deprecated: call ctx.pinned_values(port)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.pinned_values(port)

    def output_path(self, name: str) -> Path:
        port = self.outputs[name]
        return self.output_dir / (port.filename or name)


@dataclass
class StageResult:
    """Optional extras a stage returns besides the files it wrote."""

    summary: str = ""  # one short line for the run table, e.g. "nodes 512 -> 301"
    metrics: dict[str, Json] = field(default_factory=dict)  # small numbers kept in the run record
    # {output port: the float values it was written from}, recorded with the output in the lock file so that
    # another CPU's run can keep them (StageContext.pinned_values); for small outputs only (a calibration
    # table's ranges, not a model's weights).
    values: dict[str, Sequence[float]] = field(default_factory=dict)
    # A stage that judges accuracy: the data its verdict rests on (real, random feeds, calibration data reused),
    # which the run table, the reports and `engine optimize` show beside the verdict.
    data_source: DataSource | None = None


class Stage:
    """Base class of every stage type; subclasses fill in the class attributes and `run`.

    Register a subclass under the `ortflow.stages` entry-point group. Import heavy libraries
    (onnxruntime, onnx) inside `run`, so listing and planning stay fast.
    """

    type: ClassVar[str]
    version: ClassVar[str] = (
        "1"  # bump when the same params and inputs would produce different bytes
    )
    description: ClassVar[str] = ""
    inputs: ClassVar[tuple[Port, ...]] = ()
    outputs: ClassVar[tuple[Port, ...]] = ()
    params_schema: ClassVar[JsonObject] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    exclusive: ClassVar[bool] = False  # run alone (timing-sensitive work such as benchmarks)
    deterministic: ClassVar[bool] = True  # same inputs, same bytes (measurements are not)
    # The stage types it runs as steps (StageContext.steps): their versions are part of its cache key.
    step_types: ClassVar[tuple[str, ...]] = ()
    # Its parameters as a frozen dataclass (engine.contracts.params: settings_problems holds it to params_schema), read
    # with ctx.settings(); None: read by key from ctx.params.
    settings: ClassVar[builtins.type | None] = None  # `type` is the name of its type here
    # What it reports and how a reader shows it: its per-model measures (unit, which way is better, plotted?), its
    # report tables kept out of the terminal, the model it chooses (engine.contracts.declarations). The engine prints, plots
    # and reads results from these, never from a stage's type or file names.
    declares: ClassVar[Declares] = NOTHING

    def check(self, params: Params) -> list[str]:
        """Problems with a combination of parameters that a JSON Schema cannot express (checked before any
        stage runs; each message says what to change)."""
        return []

    def metric_names(self, params: Params, files: dict[str, Path]) -> dict[str, Better] | None:
        """The per-model metrics its metrics outputs report and which way each is better, known before it
        runs (`files`: its inputs that are files of the recipe), so that stages reading them can be checked
        by `engine validate`; None when it cannot say."""
        return None

    def check_metrics(self, params: Params, known: KnownMetrics) -> list[str]:
        """Problems with the metric names its parameters use (gates, constraints, objectives), against those it
        computes itself and those its metrics inputs carry; each message says what to change."""
        return []

    def env_facts(self, params: Params) -> tuple[str, ...]:
        """Names of environment facts (see engine.leaves.environment) the outputs depend on; part of the cache key."""
        return ()

    def run(self, ctx: StageContext) -> StageResult | None:
        raise NotImplementedError

    @classmethod
    def input_port(cls, name: str) -> Port | None:
        return next((p for p in cls.inputs if p.name == name), None)

    @classmethod
    def output_port(cls, name: str) -> Port | None:
        return next((p for p in cls.outputs if p.name == name), None)

    @classmethod
    def same_result(
        cls, params: Params, port: str, ours: tuple[float, ...], locked: tuple[float, ...]
    ) -> bool:
        """Whether the float values an output was written from (StageResult.values) and those a lock file
        records for the same key are one result made on two CPUs (their kernels round differently): then
        the lock's differing bytes are drift, not tampering. No stage's values agree by default."""
        return False


def within_tolerance(
    stage_cls: type[Stage],
    params: Mapping[str, Json],
    ours: dict[str, tuple[float, ...] | None],
    locked: dict[str, tuple[float, ...] | None],
) -> bool:
    """Whether every output that differs ({port: float values} on each side) is, by its stage type, the same
    result made on another CPU; an output with no values on either side (or values no run wrote) is not."""
    for port in sorted(ours):
        mine, theirs = ours[port], locked.get(port)
        if mine is None or theirs is None:
            return False
        if not stage_cls.same_result(params, port, mine, theirs):
            return False
    return bool(ours)
