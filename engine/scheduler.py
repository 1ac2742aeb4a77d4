"""Walks the stage DAG: cached stages resolve at once, the rest run on an executor as their inputs land."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.dag import StageGraph
from engine.executors import Executor
from engine.recipe import Recipe, Ref
from engine.errors import StageError
from engine.runner import FAILED, NOT_RUN, SKIPPED, StageJob, StageOutcome, cached_outcome, job_for
from engine.store import ArtifactStore


@dataclass
class SchedulerEvents:
    """Callbacks for progress displays; all are called from the scheduling thread."""

    started: Callable[[str], None] = lambda name: None
    finished: Callable[[StageOutcome], None] = lambda outcome: None
    log: Callable[[str], None] = lambda message: None


@dataclass
class Scheduler:
    recipe: Recipe
    graph: StageGraph
    store: ArtifactStore
    executor: Executor
    sources: dict[str, tuple[str, Any]]  # "inputs.x" / "datasets.y" -> (digest, Path or Dataset)
    keep_going: bool = False
    events: SchedulerEvents = field(default_factory=SchedulerEvents)

    def run(self, only: set[str] | None = None) -> dict[str, StageOutcome]:
        """Each stage is looked up in the cache once, when its last upstream stage finishes."""
        order = [n for n in self.graph.order if only is None or n in only]
        position = {name: i for i, name in enumerate(order)}
        dependents: dict[str, list[str]] = {name: [] for name in order}
        waiting: dict[str, int] = {}
        for name in order:
            preds = [p for p in self.graph.predecessors[name] if p in position]
            waiting[name] = len(preds)
            for pred in preds:
                dependents[pred].append(name)
        outcomes: dict[str, StageOutcome] = {}
        runnable: dict[str, StageJob] = {}
        running: dict[Future, str] = {}
        stopping = False

        def finish(first: StageOutcome) -> None:
            settled = [first]  # a work list, not recursion: a cached or skipped chain can be thousands long
            while settled:
                outcome = settled.pop()
                outcomes[outcome.name] = outcome
                self.events.finished(outcome)
                for child in dependents[outcome.name]:
                    if child in outcomes:
                        continue
                    if not outcome.succeeded:  # decided even while stopping, so dependents say why
                        skipped = StageOutcome(child, SKIPPED, error=f"upstream '{outcome.name}' {outcome.status}")
                        outcomes[child] = skipped
                        settled.append(skipped)
                        continue
                    waiting[child] -= 1
                    if waiting[child] == 0:
                        ready = resolve(child)
                        if ready is not None:
                            settled.append(ready)

        def resolve(name: str) -> StageOutcome | None:
            """The stage's outcome if it needs no execution (cached, or unable to start), else queue it."""
            job = self._job(name, outcomes)
            if isinstance(job, StageOutcome):
                return job
            cached = self._cached(job) if self.executor.local_cache_lookup else None
            if cached is None:
                runnable[name] = job
            return cached

        for name in order:
            if waiting[name] == 0 and name not in outcomes:
                ready = resolve(name)
                if ready is not None:
                    finish(ready)
        while runnable or running:
            if not stopping:
                for name in sorted(runnable, key=position.__getitem__):
                    if self._has_slot(name, running):
                        job = runnable.pop(name)
                        self.events.started(name)
                        running[self.executor.run_stage(self.store, job, self.events.log)] = name
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                running.pop(future)
                outcome = future.result()
                finish(outcome)
                if outcome.status != SKIPPED and not outcome.succeeded and not self.keep_going:
                    stopping = True  # an optional stage skipped (no GPU, say) is not a failure
        for name in order:
            if name not in outcomes:
                outcomes[name] = StageOutcome(name, NOT_RUN, error="stopped after a failure (use --keep-going)")
                self.events.finished(outcomes[name])
        return {name: outcomes[name] for name in order}

    def _cached(self, job: StageJob) -> StageOutcome | None:
        try:
            return cached_outcome(self.store, job)
        except StageError as exc:  # e.g. a plugin naming an environment fact that does not exist
            return StageOutcome(job.spec.name, FAILED, error=str(exc))

    def _has_slot(self, name: str, running: dict[Future, str]) -> bool:
        if len(running) >= self.executor.slots:
            return False
        exclusive = self.recipe.stages[name].stage_cls.exclusive
        if exclusive and running:
            return False  # timing-sensitive work runs alone
        return not any(self.recipe.stages[other].stage_cls.exclusive for other in running.values())

    def _job(self, name: str, outcomes: dict[str, StageOutcome]) -> StageJob | StageOutcome:
        def locate(ref: Ref) -> tuple[str, Any] | None:
            if ref.is_source:
                return self.sources[str(ref)]
            out = (outcomes[ref.source].record or {}).get("outputs", {}).get(ref.name)
            return (out["digest"], self.store.object_path(out["digest"])) if out else None

        job = job_for(self.recipe.stages[name], locate)
        if isinstance(job, Ref):
            return StageOutcome(name, SKIPPED, error=f"upstream '{job.source}' did not produce its optional output '{job.name}'")
        return job
