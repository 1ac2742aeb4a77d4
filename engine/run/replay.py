"""A run replayed from the cache, running nothing: each stage's outcome read from its run record, as a run
would have settled it (`engine report` writes the outputs and report again from these)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ortflow.engine.contracts.types import Missing, Recipe, StageOutcome, Status
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.jobs import job_for, locator, settled, tolerated, without
from ortflow.engine.store.base import Store


def replay(
    recipe: Recipe, graph: StageGraph, store: Store, sources: dict[str, tuple[str, Any]]
) -> tuple[dict[str, StageOutcome], list[str]]:
    """Each stage's outcome the cache can supply, in the graph's order, and the stages it cannot (nor so
    those downstream of them). A refused optional stage is marked dropped from each dependent that went on
    without it, as the scheduler marks it."""
    outcomes: dict[str, StageOutcome] = {}
    produced: dict[str, dict[str, str] | None] = {}
    missing = []
    cache = _Cache(recipe, graph, store, locator(sources, produced, store.object_path))
    for name in graph.order:
        found = cache.outcome(name, outcomes)
        if found is None:
            missing.append(name)
            continue
        outcomes[name] = found
        produced[name] = found.record.digests if found.record is not None else None
        if found.record is None:
            continue
        for upstream in graph.predecessors[
            name
        ]:  # a refused optional stage this one went on without
            if outcomes[upstream].tolerated:
                outcomes[upstream] = replace(
                    outcomes[upstream], dropped_from=(*outcomes[upstream].dropped_from, name)
                )
    return outcomes, missing


@dataclass(frozen=True)
class _Cache:
    """What reading one stage's outcome from the cache looks at; `locate` resolves references from the
    sources and from what the stages replayed so far produced."""

    recipe: Recipe
    graph: StageGraph
    store: Store
    locate: Any

    def outcome(self, name: str, outcomes: dict[str, StageOutcome]) -> StageOutcome | None:
        """The stage's outcome from its run record in the cache, its inputs located as a run would (without
        its refused optional upstream stages); skipped as a run skips it where it cannot do without one; None
        where an upstream stage is not there or the cache lacks it."""
        preds = self.graph.predecessors[name]
        if not all(p in outcomes for p in preds):
            return None
        spec = without(self.recipe.stages[name], {p for p in preds if outcomes[p].tolerated})
        blocked = next(
            (
                p
                for p in preds
                if outcomes[p].status is Status.SKIPPED or (spec is None and outcomes[p].tolerated)
            ),
            None,
        )
        if blocked is not None:
            return StageOutcome(
                name, Status.SKIPPED, error=f"upstream '{blocked}' {outcomes[blocked].status}"
            )
        try:
            job = job_for(spec, self.locate) if spec is not None else None
        except StageError:  # a key that cannot be computed: not in the cache either
            return None
        record = (
            self.store.read_run(job.identity.key)
            if job is not None and not isinstance(job, Missing)
            else None
        )
        if record is None:
            return None
        return tolerated(
            settled(name, Status.CACHED, 0.0, record.key, record), self.recipe.stages[name]
        )
