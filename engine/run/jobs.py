"""From a stage spec to a runnable job: its inputs located (as digests and paths), its cache key, and what
a run record found in the store means as an outcome."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Mapping

from ortflow.engine.contracts.builds import FloatValues, Identity, RunRecord
from ortflow.engine.contracts.dataset import Dataset
from ortflow.engine.contracts.provenance import DataProvenance, DataSource
from ortflow.engine.contracts.registry import installed_stages
from ortflow.engine.contracts.stage import ArtifactKind, within_tolerance
from ortflow.engine.contracts.types import Missing, Ref, StageJob, StageOutcome, StageSpec, Status
from ortflow.engine.leaves.environment import facts, target_isa
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.store.base import RunRecords
from ortflow.engine.store.records import kinds_problem, lock_disagreement

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import Dataset

Located = tuple[str, Any]  # (content digest, a Path, a Dataset, or None where only keys are wanted)
Locate = Callable[[Ref], "Located | None"]


def locator(
    sources: Mapping[str, Located],
    produced: Mapping[str, Mapping[str, str] | None],
    object_path: Callable[[str], Path] | None = None,
) -> Locate:
    """Resolves a reference from the recipe's sources or from what an upstream stage produced ({stage: {port:
    digest}}, from its run record or lock-file entry); None for an output the upstream did not produce."""

    def locate(ref: Ref) -> Located | None:
        if ref.is_source:
            return sources[str(ref)]
        digest = (produced.get(ref.source) or {}).get(ref.name)
        if not digest:
            return None
        return digest, object_path(digest) if object_path is not None else None

    return locate


def job_for(spec: StageSpec, locate: Locate) -> StageJob | Missing:
    """The stage's job, its inputs resolved by `locate` and its Identity (so its key) computed, once; or which
    reference could not be resolved (an optional output its upstream stage did not produce). A StageError
    where the key cannot be computed (a stage naming an environment fact that does not exist)."""
    digests: dict[str, str | list[str]] = {}
    values: dict[str, Path | list[Path] | Dataset] = {}
    for port, binding in sorted(spec.inputs.items()):
        resolved = []
        for ref in binding.refs:
            found = locate(ref)
            if found is None:
                return Missing(ref)
            resolved.append(found)
        digests[port] = binding.shaped([d for d, _ in resolved])
        values[port] = binding.shaped([v for _, v in resolved])
    return StageJob(spec, identify(spec, digests), values)


def tolerated(outcome: StageOutcome, spec: StageSpec) -> StageOutcome:
    """The outcome, marked tolerated where an optional stage said no by itself: its gate refused its output (a
    cached verdict alike), it refused with its own one-line verdict (a StageError: a quantizer that cannot
    handle this graph, a written model that does not load), or an execution provider it needs is missing here.
    Such a stage is shown with its reason and never served downstream, but it is not the run's failure. A crash
    (an exception that is not the stage's verdict) and a full disk still fail the run."""
    own = (
        outcome.status is Status.GATE_FAILED
        or (outcome.status is Status.SKIPPED and outcome.unavailable)
        or (outcome.status is Status.FAILED and outcome.refused)
    )
    return (
        replace(outcome, tolerated=True)
        if spec.optional and own and not outcome.tolerated
        else outcome
    )


def without(spec: StageSpec, dropped: Collection[str]) -> StageSpec | None:
    """`spec` with the outputs of the `dropped` stages (tolerated refusals) taken out of its list (`many`) ports,
    which then take the rest; None where it cannot do without them: one is bound to a single-value port or named
    in `after:`, or a list port would be left empty (unless its stage type declares that port optional: then the
    port is left out, as a recipe may leave it out)."""
    if not dropped:
        return spec
    if any(name in dropped for name in spec.after):
        return None
    optional = {p.name for p in spec.stage_cls.inputs if p.optional}
    inputs = {}
    for port, binding in spec.inputs.items():
        kept = tuple(ref for ref in binding.refs if ref.is_source or ref.source not in dropped)
        if len(kept) == len(binding.refs):
            inputs[port] = binding
        elif not binding.many or not (kept or port in optional):
            return None
        elif kept:
            inputs[port] = replace(binding, refs=kept)
    return replace(spec, inputs=inputs)


def datasets_upstream(
    stages: Mapping[str, StageSpec], order: Iterable[str]
) -> dict[str, frozenset[str]]:
    """Per stage, the datasets (by name) it or any stage upstream of it read: what its outputs were made from.
    One pass in topological order, so a chain thousands of stages long costs no recursion."""
    used: dict[str, frozenset[str]] = {}
    for name in order:
        found: set[str] = set()
        for ref in stages[name].refs():
            if ref.source == "datasets":
                found.add(ref.name)
            elif not ref.is_source:
                found |= used.get(ref.source, frozenset())
        used[name] = frozenset(found)
    return used


def made_from(
    spec: StageSpec, upstream: Mapping[str, frozenset[str]], sources: Mapping[str, Located]
) -> dict[str, tuple[str, ...]]:
    """Per input port of `spec`, the digests of the datasets its upstream artifacts were made from (none for a
    port bound to the recipe's own inputs or datasets)."""
    found = {}
    for port, binding in spec.inputs.items():
        names = {
            n for ref in binding.refs if not ref.is_source for n in upstream.get(ref.source, ())
        }
        digests = sorted({sources[f"datasets.{n}"][0] for n in names if f"datasets.{n}" in sources})
        if digests:
            found[port] = tuple(digests)
    return found


def ranges_upstream(
    stages: Mapping[str, StageSpec], order: Iterable[str]
) -> dict[str, frozenset[str]]:
    """Per stage, the sources (`datasets.<name>`, `inputs.<name>`) the activation ranges baked into its outputs
    came from, at it or upstream: the datasets a stage that writes a calibration table read, and a calibration
    table given as a recipe input or made from no declared dataset (`<stage>.table`), whose data nobody here
    can name. Told by the ports' kinds, so it holds for any stage type that calibrates, built in or not."""
    found_by: dict[str, frozenset[str]] = {}
    for name in order:
        spec = stages[name]
        calibrates = any(p.kind is ArtifactKind.CALIBRATION_TABLE for p in spec.stage_cls.outputs)
        kinds = {p.name: p.kind for p in spec.stage_cls.inputs}
        found: set[str] = set()
        read_data = False
        for port, binding in spec.inputs.items():
            for ref in binding.refs:
                if not ref.is_source:
                    found |= found_by.get(ref.source, frozenset())
                elif kinds.get(port) is ArtifactKind.CALIBRATION_TABLE or (
                    calibrates and ref.source == "datasets"
                ):
                    found.add(str(ref))
                    read_data = read_data or ref.source == "datasets"
        if calibrates and not read_data:  # a table made from no dataset the recipe declares
            found.add(f"{name}.table")  # data unknown
        found_by[name] = frozenset(found)
    return found_by


def calibrated_on(
    spec: StageSpec, ranges: Mapping[str, frozenset[str]], sources: Mapping[str, Located]
) -> dict[str, tuple[DataSource | None, ...]]:
    """Per input port of `spec`, per reference: the least trusted data the activation ranges baked into that
    artifact came from (None: no ranges were made for it in this recipe). Ports with none are left out."""
    found = {}
    for port, binding in spec.inputs.items():
        per_ref = tuple(
            None if ref.is_source else _least_trusted(ranges.get(ref.source, ()), sources)
            for ref in binding.refs
        )
        if any(source is not None for source in per_ref):
            found[port] = per_ref
    return found


_TRUST = {DataProvenance.RANDOM: 0, DataProvenance.UNKNOWN: 1, DataProvenance.REAL: 2}


def _least_trusted(keys: Iterable[str], sources: Mapping[str, Located]) -> DataSource | None:
    said = [_data_source(key, sources) for key in sorted(keys)]
    return min(said, key=lambda s: _TRUST[s.provenance]) if said else None


def _data_source(key: str, sources: Mapping[str, Located]) -> DataSource:
    """A dataset as its loader declares it; a table given as a recipe input: unknown data, named by its path."""
    value = sources[key][1] if key in sources else None
    if isinstance(value, Dataset):
        return value.source()
    paths = (str(value),) if isinstance(value, (str, Path)) else ()
    loader = "dataset" if key.startswith("datasets.") else "calibration table"
    return DataSource(DataProvenance.UNKNOWN, loader, key, paths)


def upstream_datasets(
    spec: StageSpec, upstream: Mapping[str, frozenset[str]], sources: Mapping[str, Located]
) -> dict[str, tuple[Dataset, ...]]:
    """Per input port of `spec`, the datasets (as a stage receives them) its upstream artifacts were made from,
    by name: a calibration table's, the data its calibrate stage read."""
    found = {}
    for port, binding in spec.inputs.items():
        names = sorted(
            {n for ref in binding.refs if not ref.is_source for n in upstream.get(ref.source, ())}
        )
        datasets = tuple(sources[f"datasets.{n}"][1] for n in names if f"datasets.{n}" in sources)
        if datasets:
            found[port] = datasets
    return found


def identify(spec: StageSpec, input_digests: Mapping[str, str | list[str]]) -> Identity:
    """What the stage's outputs are made from, with the environment facts its type declares: its cache key."""
    try:
        env = facts(tuple(spec.stage_cls().env_facts(spec.params)))
    except KeyError as exc:
        raise StageError(
            f"stage type {spec.uses} declares {exc.args[0]} — fix the stage's env_facts"
        ) from None
    if "target_isa" in env:
        env["target_isa"] = target_isa(spec.target_cpu)
    env.update(_step_versions(spec.stage_cls.step_types))
    if spec.labels_keyed:
        env.update(_labels(spec))
    return Identity(spec.uses, spec.stage_cls.version, spec.params, dict(input_digests), env)


def on_this_machine(job: StageJob) -> StageJob:
    """The job with its identity computed here: a worker that runs a job the client planned keys it with its
    own environment facts, as it would had it planned the job itself."""
    return replace(job, identity=identify(job.spec, job.input_digests))


def _labels(spec: StageSpec) -> dict[str, str]:
    """`label:<port>` -> the names a step's stage sees for the inputs of each port that takes many (those a
    stage names its per-input results by: validate_accuracy's candidates, benchmark's models), as text beside
    the step versions: facts that decide the outputs without being the host's. A single-input port's label
    stays out, so a search's quantize step is still served the bytes a recipe stage built alike."""
    return {
        f"label:{port}": ",".join(ref.source for ref in binding.refs)
        for port, binding in sorted(spec.inputs.items())
        if binding.many
    }


def _step_versions(step_types: tuple[str, ...]) -> dict[str, str]:
    """`step:<type>` -> the installed version of each stage type a composite stage runs as steps: a search
    whose quantizer changed is a new result, not one to serve from the cache."""
    stages = installed_stages()
    return {
        f"step:{name}": str(stages.get(name).version) if name in stages else "not installed"
        for name in step_types
    }


def settled(name: str, status: Status, seconds: float, key: str, record: RunRecord) -> StageOutcome:
    """A gate's verdict is part of what is cached: the same inputs fail the same gate without re-running."""
    if record.refused:
        return StageOutcome(
            name, Status.FAILED, seconds, key, record, error=record.refused, refused=True
        )
    if record.gate_failed:
        return StageOutcome(
            name, Status.GATE_FAILED, seconds, key, record, error=record.gate_failed
        )
    return StageOutcome(name, status, seconds, key, record)


def cached_outcome(store: RunRecords, job: StageJob) -> StageOutcome | None:
    return cached_verdict(job.spec, store.read_run(job.identity.key, job.spec.name))


def cached_verdict(spec: StageSpec, record: RunRecord | None) -> StageOutcome | None:
    """The settling rule for a cached record, one for the plan and the run: the outcome it stands for (a
    gate's or the stage's own refusal included, tolerated where the stage is optional, so dropped
    downstream), or None where the record does not answer (none, or a required stage's refusal)."""
    if record is None or not served(record, spec):
        return None
    return tolerated(settled(spec.name, Status.CACHED, 0.0, record.key, record), spec)


def served(record: RunRecord, spec: StageSpec) -> bool:
    """Whether a cached record answers the stage: a refusal only for an optional stage (a required one is
    built again: its refusal fails the run, and the user may have fixed what it named)."""
    return record.refused is None or spec.optional


@dataclass(frozen=True)
class LockedOutputs:
    """What the committed lock file says each cache key produced ({key: {port: digest}}). A cache entry that
    serves other bytes under a key the lock records was altered (or the lock was): never served."""

    file: str = ""
    by_key: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    pinned_by_key: Mapping[str, Mapping[str, FloatValues]] = field(
        default_factory=dict
    )  # {key: {port: float values}}

    def for_job(self, job: StageJob) -> StageJob:
        """The job with the float values the lock records for its key (StageContext.pinned_values)."""
        if not self.pinned_by_key:
            return job
        values = self.pinned_by_key.get(job.identity.key)
        return replace(job, pinned_values=dict(values)) if values else job


def served_problem(outcome: StageOutcome, spec: StageSpec, locked: LockedOutputs) -> str | None:
    """Why a cached record must not be served for this stage, or None."""
    key = outcome.key or ""  # a served outcome always has its key
    outputs = (
        {port: out.kind for port, out in outcome.record.outputs.items()}
        if outcome.record is not None
        else {}
    )
    ports = {p.name: (p.kind.value, p.optional) for p in spec.stage_cls.outputs}
    problem = kinds_problem(outputs, ports)
    if problem:
        return (
            f"the cache's run record for key {key[:12]} does not fit stage type {spec.uses}: {problem} "
            "— run `engine cache verify --remove` and run again"
        )
    differs = lock_disagreement(
        outcome.record.digests if outcome.record is not None else {},
        dict(locked.by_key.get(key) or {}),
    )
    if differs is None or tolerated_drift(outcome, spec, locked):
        return None
    port, served, digest = differs
    return (
        f"the cache serves output '{port}' as object {served} for key {key[:12]}, but {locked.file} "
        f"records {digest} for the same key: the cache entry was changed after it was built (or the lock "
        "file was edited) — run `engine cache verify` on this recipe, or restore the lock file from git"
    )


def _changed(outcome: StageOutcome, locked: LockedOutputs) -> dict[str, str]:
    """{output: the lock's digest} where the served record names other bytes under the lock's key."""
    digests = locked.by_key.get(outcome.key or "") or {}
    outputs = outcome.record.outputs if outcome.record is not None else {}
    return {
        port: digest
        for port, digest in digests.items()
        if port in outputs and outputs[port].digest != digest
    }


def tolerated_drift(outcome: StageOutcome, spec: StageSpec, locked: LockedOutputs) -> bool:
    """Whether a served record that names other bytes than the lock for the same key differs from it only as
    two CPUs' rounding does (the values each recorded, within the stage type's tolerance): drift, not
    tampering. A record whose identity was altered never gets here (engine.store.records)."""
    changed = _changed(outcome, locked)
    if not changed or outcome.record is None:
        return False
    ours = {port: outcome.record.outputs[port].values for port in changed}
    theirs: dict[str, FloatValues | None] = dict(locked.pinned_by_key.get(outcome.key or "") or {})
    return within_tolerance(spec.stage_cls, dict(outcome.record.params), ours, theirs)


def with_locked_objects(
    outcome: StageOutcome,
    locked: LockedOutputs,
    object_path: Callable[[str], Path],
    intact: Callable[[str], bool],
) -> StageOutcome:
    """A served result that drifted from the lock, with the lock's own outputs where the cache holds them
    (so the run goes on with the committed bytes and the lock stays as it is); else unchanged."""
    changed = _changed(outcome, locked)
    if not changed or outcome.record is None or not all(map(intact, changed.values())):
        return outcome
    values = locked.pinned_by_key.get(outcome.key or "") or {}
    outputs = {
        port: replace(
            out,
            digest=changed[port],
            size=object_path(changed[port]).stat().st_size,
            values=values.get(port),
        )
        if port in changed
        else out
        for port, out in outcome.record.outputs.items()
    }
    note = (
        f"stage '{outcome.name}': the cache's {', '.join(sorted(changed))} for key {(outcome.key or '')[:12]} "
        f"differs from what {locked.file} records only by this CPU's rounding (not tampering): the lock "
        "file's, which this cache also holds, is used"
    )
    return replace(outcome, record=replace(outcome.record, outputs=outputs), note=note)
