"""Steps: a composite stage (a search, say) runs other registered stage types as sub-stages, each looked up
and stored in the cache under exactly the key rules of a recipe stage (type, version, parameters with
defaults, input digests, environment facts). A crashed or re-targeted search therefore reuses every
candidate it already built, timed or checked; and `cache gc` keeps a step as long as its parent is kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, cast

from ortflow.engine.contracts.params import fill_defaults, params_problems
from ortflow.engine.contracts.registry import Registry, installed_stages
from ortflow.engine.contracts.stage import Artifact, Stage, StepResult
from ortflow.engine.contracts.types import Binding, Ref, StageJob, StageOutcome, StageSpec, Status
from ortflow.engine.leaves.errors import ProviderUnavailable, StageError
from ortflow.engine.leaves.json_types import Params
from ortflow.engine.run.jobs import identify
from ortflow.engine.store.base import Store

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import Dataset

Execute = Callable[[StageJob, Callable[[str], None]], StageOutcome]


@dataclass
class StepRunner:
    """The engine's side of the stage contract's `Steps`: it runs a step as the runner runs a stage."""

    store: Store
    parent: str  # the running stage's name, for work folders and messages
    execute: Execute  # the runner's own (handed in, so this module never imports the runner)
    log: Callable[[str], None] = lambda _m: None
    keys: list[str] = field(
        default_factory=list
    )  # every step's key, recorded in the parent's run record
    registry: Registry = field(default_factory=installed_stages)
    # by artifact digest, the datasets the parent's inputs were made from upstream: a step handed one of those
    # artifacts (a search's calibration table) sees them as a recipe stage would (StageContext.upstream_datasets)
    upstream: dict[str, tuple[Dataset, ...]] = field(default_factory=dict)

    def stage_type(self, uses: str) -> type[Stage]:
        if uses not in self.registry:
            raise StageError(
                f"step type '{uses}' is not installed (installed: {', '.join(self.registry.names())})"
            )
        stage: type[Stage] = self.registry.get(
            uses
        )  # the stages' registry checked it subclasses Stage
        return stage

    def run(
        self,
        uses: str,
        params: Params,
        inputs: dict[str, Artifact | list[Artifact]],
        labels: dict[str, str | list[str]] | None = None,
    ) -> StepResult:
        """Run stage type `uses` (or serve it from the cache). `labels` name the inputs in its outputs, the
        way `<stage>.<port>` references name them in a recipe, and are part of its key (a stage writes them into its
        results: a step labelled "c01" is never served to one that asks for "int8")."""
        stage_cls = self.stage_type(uses)
        # the Steps protocol takes any mapping (a stage passes its own read-only params): a copy to fill in
        problems = params_problems(stage_cls, dict(params))
        if problems:
            raise StageError(
                f"{self.parent}: step {uses} has bad parameters: {'; '.join(problems)}"
            )
        filled = fill_defaults(dict(params), stage_cls.params_schema)
        inputs = {port: _shaped(stage_cls, port, value) for port, value in inputs.items()}
        refs = {
            port: _refs(port, value, (labels or {}).get(port)) for port, value in inputs.items()
        }
        # optional: a missing provider comes back as SKIPPED, re-raised below so the parent skips (or fails) alike
        spec = StageSpec(
            f"{self.parent}.{uses}", uses, stage_cls, filled, refs, [], None, optional=True
        )
        spec.labels_keyed = True  # the labels are written into its results: part of its key
        digests = {
            port: [a.digest for a in v] if isinstance(v, list) else v.digest
            for port, v in inputs.items()
        }
        # a port taking many holds files or folders (a dataset is one input, never in a list)
        paths: dict[str, Path | list[Path] | Dataset] = {
            port: cast("list[Path]", [a.path for a in v]) if isinstance(v, list) else v.path
            for port, v in inputs.items()
        }
        upstream = {
            port: found
            for port, v in inputs.items()
            if (found := self._made_from(v if isinstance(v, list) else [v]))
        }
        job = StageJob(spec, identify(spec, digests), paths, upstream_data=upstream)
        outcome = self.execute(job, self.log)
        if outcome.key:
            self.keys.append(outcome.key)
        if outcome.status == Status.SKIPPED:
            raise ProviderUnavailable(str(outcome.error).removeprefix("optional stage skipped: "))
        if outcome.status not in (Status.RAN, Status.CACHED, Status.GATE_FAILED):
            # the step's own log is in its outcome (and its run record); the parent's outcome keeps what it printed
            raise StageError(f"step {uses} failed: {outcome.error}")
        produced = outcome.record.digests if outcome.record is not None else {}
        outputs = {
            port: Artifact(digest, self.store.object_path(digest))
            for port, digest in produced.items()
        }
        refused = str(outcome.error) if outcome.status == Status.GATE_FAILED else None
        return StepResult(outputs, refused)

    def _made_from(self, artifacts: list[Artifact]) -> tuple[Dataset, ...]:
        found: dict[str, Dataset] = {}
        for artifact in artifacts:
            found.update({d.name: d for d in self.upstream.get(artifact.digest, ())})
        return tuple(found.values())


def _shaped(
    stage_cls: type[Stage], name: str, value: Artifact | list[Artifact]
) -> Artifact | list[Artifact]:
    """A step's input as a recipe stage receives it: a list on a port that takes many (even of one), else one
    Artifact, so a stage never has to accept both shapes."""
    port = stage_cls.input_port(name)
    if port is None:
        raise StageError(
            f"step {stage_cls.type} has no input '{name}' (its inputs: {', '.join(p.name for p in stage_cls.inputs)})"
        )
    if port.many:
        return value if isinstance(value, list) else [value]
    if isinstance(value, list):
        raise StageError(
            f"step {stage_cls.type}: input '{name}' takes one Artifact, got a list of {len(value)}"
        )
    return value


def _refs(port: str, value: Artifact | list[Artifact], label: str | list[str] | None) -> Binding:
    """References named by the labels, which is what StageContext.label shows for a step's inputs."""

    def ref(index: int | None = None) -> Ref:
        text = label[index] if isinstance(label, list) and index is not None else label
        return Ref(str(text or port).replace(".", "_"), port)

    if isinstance(value, list):  # the plugin API's shape: a list for a port that takes many
        return Binding(tuple(ref(i) for i in range(len(value))), True)
    return Binding.one(ref())
