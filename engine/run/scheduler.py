"""Walks the stage DAG: cached stages resolve at once, the rest run on an executor as their inputs land."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ortflow.engine.contracts.types import (
    Missing,
    QuietObserver,
    Recipe,
    RunObserver,
    StageJob,
    StageOutcome,
    Status,
)
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.executors import Executor
from ortflow.engine.run.jobs import (
    LockedOutputs,
    cached_outcome,
    calibrated_on,
    datasets_upstream,
    job_for,
    locator,
    made_from,
    ranges_upstream,
    served_problem,
    tolerated,
    upstream_datasets,
    with_locked_objects,
    without,
)
from ortflow.engine.store.base import Store


@dataclass
class SchedulerEvents:
    """Callbacks for progress displays; all are called from the scheduling thread."""

    started: Callable[[str], None] = lambda name: None
    finished: Callable[[StageOutcome], None] = lambda outcome: None
    log: Callable[[str], None] = lambda message: None

    @classmethod
    def telling(cls, observers: Sequence[RunObserver]) -> SchedulerEvents:
        """Callbacks that tell each observer (types.RunObserver) in turn, in the order given."""

        def started(name: str) -> None:
            for observer in observers:
                observer.stage_started(name)

        def finished(outcome: StageOutcome) -> None:
            for observer in observers:
                observer.stage_finished(outcome)

        def log(message: str) -> None:
            for observer in observers:
                observer.run_message(message)

        return cls(started, finished, log)


@dataclass(frozen=True)
class EventsObserver(QuietObserver):
    """A caller's callbacks (a console's progress display) as a RunObserver."""

    events: SchedulerEvents

    def stage_started(self, name: str) -> None:
        self.events.started(name)

    def stage_finished(self, outcome: StageOutcome) -> None:
        self.events.finished(outcome)

    def run_message(self, message: str) -> None:
        self.events.log(message)


@dataclass
class Scheduler:
    recipe: Recipe
    graph: StageGraph
    store: Store
    executor: Executor
    sources: dict[str, tuple[str, Any]]  # "inputs.x" / "datasets.y" -> (digest, Path or Dataset)
    keep_going: bool = False
    events: SchedulerEvents = field(default_factory=SchedulerEvents)
    locked: LockedOutputs = field(default_factory=LockedOutputs)
    _upstream: dict[str, frozenset[str]] | None = field(default=None, init=False, repr=False)
    _ranges: dict[str, frozenset[str]] | None = field(default=None, init=False, repr=False)

    def run(self, only: set[str] | None = None) -> dict[str, StageOutcome]:
        """Each stage is looked up in the cache once, when its last upstream stage finishes."""
        state = _RunState([n for n in self.graph.order if only is None or n in only], self.graph)
        for name in state.order:
            if state.waiting[name] == 0 and name not in state.outcomes:
                self._resolve_and_settle(state, name)
        while state.runnable or state.running:
            if not state.stopping:
                self._start_what_fits(state)
            if not state.running:
                break
            done, _ = wait(list(state.running), return_when=FIRST_COMPLETED)
            for future in done:
                state.running.pop(future)
                outcome = future.result()
                self._settle(state, outcome)
                excused = state.outcomes[
                    outcome.name
                ].tolerated  # an optional stage's refusal: dropped, not a failure
                if (
                    outcome.status != Status.SKIPPED
                    and not outcome.succeeded
                    and not excused
                    and not self.keep_going
                ):
                    state.stopping = (
                        True  # an optional stage skipped (no GPU, say) is not a failure
                    )
        for name in state.order:
            if name not in state.outcomes:
                state.outcomes[name] = StageOutcome(
                    name, Status.NOT_RUN, error="stopped after a failure (use --keep-going)"
                )
                self.events.finished(state.outcomes[name])
        return {name: state.outcomes[name] for name in state.order}

    def _start_what_fits(self, state: _RunState) -> None:
        for name in sorted(state.runnable, key=state.position.__getitem__):
            if self._has_slot(name, state.running):
                job = state.runnable.pop(name)
                self.events.started(name)
                state.running[self.executor.run_stage(self.store, job, self.events.log)] = name

    def _resolve_and_settle(self, state: _RunState, name: str) -> None:
        ready = self._resolve(state, name)
        if ready is not None:
            self._settle(state, ready)

    def _settle(self, state: _RunState, first: StageOutcome) -> None:
        """Record an outcome and decide its dependents: skipped after a failure, resolved once their last
        upstream is in; an optional stage's own refusal is dropped from the dependents' list ports where they
        can do without it (engine.run.jobs.without), and they run on the rest. A work list, not recursion: a
        cached or skipped chain can be thousands long."""
        pending = [first]
        while pending:
            outcome = self._trusted(pending.pop())
            outcome = self._dropping(state, tolerated(outcome, self.recipe.stages[outcome.name]))
            state.outcomes[outcome.name] = outcome
            state.produced[outcome.name] = (
                outcome.record.digests if outcome.record is not None else None
            )
            self.events.finished(outcome)
            for child in state.dependents[outcome.name]:
                if child in state.outcomes:
                    continue
                if (
                    not outcome.succeeded and child not in outcome.dropped_from
                ):  # decided even while stopping
                    pending.append(
                        StageOutcome(
                            child,
                            Status.SKIPPED,
                            error=f"upstream '{outcome.name}' {outcome.status}",
                        )
                    )
                    state.outcomes[child] = pending[-1]
                    continue
                if not outcome.succeeded:
                    state.dropped.setdefault(child, set()).add(outcome.name)
                state.waiting[child] -= 1
                if state.waiting[child] == 0:
                    ready = self._resolve(state, child)
                    if ready is not None:
                        pending.append(ready)

    def _dropping(self, state: _RunState, outcome: StageOutcome) -> StageOutcome:
        """A tolerated refusal with the dependents that can go on without it (decided before it is shown)."""
        if not outcome.tolerated:
            return outcome
        dropped_from = tuple(
            child
            for child in state.dependents[outcome.name]
            if child not in state.outcomes
            and without(self.recipe.stages[child], state.dropped.get(child, set()) | {outcome.name})
            is not None
        )
        return replace(outcome, dropped_from=dropped_from)

    def _trusted(self, outcome: StageOutcome) -> StageOutcome:
        """A result served from the cache (here or by a worker) that contradicts its stage type or the lock
        file fails the stage: nothing downstream consumes it and the lock keeps its entry."""
        served = outcome.status is Status.CACHED or (
            outcome.status is Status.GATE_FAILED and outcome.seconds == 0.0
        )
        if (
            not served or outcome.record is None
        ):  # (a cached gate verdict is settled with 0 seconds)
            return outcome
        problem = served_problem(outcome, self.recipe.stages[outcome.name], self.locked)
        if problem:
            return StageOutcome(outcome.name, Status.FAILED, error=problem)
        return with_locked_objects(
            outcome, self.locked, self.store.object_path, self.store.object_intact
        )

    def _resolve(self, state: _RunState, name: str) -> StageOutcome | None:
        """The stage's outcome if it needs no execution (cached, or unable to start), else queue it."""
        job = self._job(name, state)
        if isinstance(job, StageOutcome):
            return job
        cached = self._cached(job) if self.executor.local_cache_lookup else None
        if cached is None:
            state.runnable[name] = job
        return cached

    def _cached(self, job: StageJob) -> StageOutcome | None:
        return cached_outcome(self.store, job)

    def _has_slot(self, name: str, running: dict[Future[StageOutcome], str]) -> bool:
        if len(running) >= self.executor.slots:
            return False
        exclusive = self.recipe.stages[name].stage_cls.exclusive
        if exclusive and running:
            return False  # timing-sensitive work runs alone
        return not any(self.recipe.stages[other].stage_cls.exclusive for other in running.values())

    def _job(self, name: str, state: _RunState) -> StageJob | StageOutcome:
        spec = without(self.recipe.stages[name], state.dropped.get(name, ()))
        if spec is None:  # not reached: _settle skips a stage that cannot do without a dropped one
            return StageOutcome(
                name, Status.SKIPPED, error="an upstream optional stage was refused"
            )
        try:
            job = job_for(spec, locator(self.sources, state.produced, self.store.object_path))
        except StageError as exc:  # a key that cannot be computed (a plugin naming an environment fact that does not exist)
            return StageOutcome(name, Status.FAILED, error=str(exc))
        if isinstance(job, Missing):
            return StageOutcome(
                name,
                Status.SKIPPED,
                error=f"upstream '{job.ref.source}' did not produce its optional output '{job.ref.name}'",
            )
        if self._upstream is None or self._ranges is None:
            self._upstream = datasets_upstream(self.recipe.stages, self.graph.order)
            self._ranges = ranges_upstream(self.recipe.stages, self.graph.order)
        job = replace(
            job,
            made_from=made_from(job.spec, self._upstream, self.sources),
            calibrated_on=calibrated_on(job.spec, self._ranges, self.sources),
            upstream_data=upstream_datasets(job.spec, self._upstream, self.sources),
        )
        return self.locked.for_job(job)


class _RunState:
    """One run's bookkeeping: who waits on how many upstream stages, what is queued, running and settled."""

    def __init__(self, order: list[str], graph: StageGraph):
        self.order = order
        self.position = {name: i for i, name in enumerate(order)}
        self.dependents: dict[str, list[str]] = {name: [] for name in order}
        self.waiting: dict[str, int] = {}
        for name in order:
            preds = [p for p in graph.predecessors[name] if p in self.position]
            self.waiting[name] = len(preds)
            for pred in preds:
                self.dependents[pred].append(name)
        self.outcomes: dict[str, StageOutcome] = {}
        self.produced: dict[
            str, dict[str, str] | None
        ] = {}  # each settled stage's {output: digest}, for locating inputs
        self.dropped: dict[
            str, set[str]
        ] = {}  # stage -> its optional upstream stages that refused: left out of its inputs
        self.runnable: dict[str, StageJob] = {}
        self.running: dict[Future[StageOutcome], str] = {}
        self.stopping = False
