"""Walks the stage DAG: cached stages resolve at once, the rest run on an executor as their inputs land."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.dag import StageGraph
from engine.executors import Executor
from engine.recipe import Recipe, Ref
from engine.runner import NOT_RUN, SKIPPED, StageJob, StageOutcome, cached_outcome, execute
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
        order = [n for n in self.graph.order if only is None or n in only]
        outcomes: dict[str, StageOutcome] = {}
        running: dict[Future, str] = {}
        pending = list(order)
        stopping = False
        while pending or running:
            progressed = True
            while progressed:
                progressed = False
                for name in list(pending):
                    preds = self.graph.predecessors[name]
                    bad = [p for p in preds if p in outcomes and not outcomes[p].succeeded]
                    if bad:  # skipping is decided even while stopping, so dependents say why they did not run
                        pending.remove(name)
                        self._finish(outcomes, StageOutcome(name, SKIPPED, error=f"upstream '{bad[0]}' {outcomes[bad[0]].status}"))
                        progressed = True
                        continue
                    if stopping or any(p not in outcomes for p in preds):
                        continue
                    job = self._job(name, outcomes)
                    if isinstance(job, StageOutcome):
                        pending.remove(name)
                        self._finish(outcomes, job)
                        progressed = True
                        continue
                    cached = cached_outcome(self.store, job)
                    if cached is not None:
                        pending.remove(name)
                        self._finish(outcomes, cached)
                        progressed = True
                        continue
                    if not self._has_slot(name, running):
                        continue
                    pending.remove(name)
                    self.events.started(name)
                    running[self.executor.submit(execute, self.store, job, self.events.log)] = name
                    progressed = True
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                outcome = future.result()
                running.pop(future)
                self._finish(outcomes, outcome)
                if not outcome.succeeded and not self.keep_going:
                    stopping = True
        for name in pending:
            outcomes[name] = StageOutcome(name, NOT_RUN, error="stopped after a failure (use --keep-going)")
            self.events.finished(outcomes[name])
        return {name: outcomes[name] for name in order if name in outcomes}

    def _finish(self, outcomes: dict[str, StageOutcome], outcome: StageOutcome) -> None:
        outcomes[outcome.name] = outcome
        self.events.finished(outcome)

    def _has_slot(self, name: str, running: dict[Future, str]) -> bool:
        if len(running) >= self.executor.slots:
            return False
        exclusive = self.recipe.stages[name].stage_cls.exclusive
        if exclusive and running:
            return False  # timing-sensitive work runs alone
        return not any(self.recipe.stages[other].stage_cls.exclusive for other in running.values())

    def _job(self, name: str, outcomes: dict[str, StageOutcome]) -> StageJob | StageOutcome:
        spec = self.recipe.stages[name]
        for ref in spec.refs():
            if not ref.is_source and ref.name not in (outcomes[ref.source].record or {}).get("outputs", {}):
                return StageOutcome(name, SKIPPED, error=f"upstream '{ref.source}' did not produce its optional output '{ref.name}'")
        digests: dict[str, str | list[str]] = {}
        paths: dict[str, Any] = {}
        for port, value in sorted(spec.inputs.items()):
            refs = value if isinstance(value, list) else [value]
            resolved = [self._resolve(ref, outcomes) for ref in refs]
            digests[port] = [d for d, _ in resolved] if isinstance(value, list) else resolved[0][0]
            paths[port] = [p for _, p in resolved] if isinstance(value, list) else resolved[0][1]
        return StageJob(spec, digests, paths)

    def _resolve(self, ref: Ref, outcomes: dict[str, StageOutcome]) -> tuple[str, Any]:
        if ref.is_source:
            return self.sources[str(ref)]
        record = outcomes[ref.source].record
        assert record is not None
        digest = record["outputs"][ref.name]["digest"]
        return digest, self.store.object_path(digest)
