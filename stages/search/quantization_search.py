"""quantize_search's search procedure: build every grid candidate through cached steps, check and time it, and
when the fastest miss the gates, rank nodes by harm and keep the most harmful in float until they are met.
The stage (stages/quantize_search.py) declares the ports and parameters; this module does the searching."""

from __future__ import annotations

import itertools

from ortflow.api import Artifact, StageContext, StageResult
from ortflow.stages.measurement.accuracy_gates import verdict_data
from ortflow.stages.search import search_result
from ortflow.stages.search import space as search_space
from ortflow.stages.search.budget import Budget
from ortflow.stages.search.candidate_steps import FAMILIES, CandidateSteps, accuracy_params
from ortflow.stages.search.candidates import Candidate, NotBuilt, kept_float
from ortflow.stages.search.localisation import quantizer_pre_process, ranked_culprits
from ortflow.stages.search.settings import SearchSettings

__all__ = ["FAMILIES", "Search", "accuracy_params"]

# per repaired base, before the other bases get theirs: the culprit is usually among them
CULPRIT_PROBES = 6


class Search(CandidateSteps):
    """One search: candidates are built, checked and timed through cached steps."""

    def __init__(self, ctx: StageContext):
        models: tuple[Artifact, ...] = ctx.artifacts("models")
        self.settings = ctx.settings(SearchSettings)
        super().__init__(
            ctx,
            models,
            ctx.artifacts("calibrations"),
            self.settings.accuracy,
            self.settings.benchmark,
        )
        self.data_source = verdict_data(ctx, "data", ("calibrations", "models"))
        # base id -> (node, margin when kept float)
        self.rankings: dict[str, list[tuple[str, float | None]]] = {}
        # base id -> nodes where its error enters, worst first
        self.culprits: dict[str, list[str]] = {}
        # per repaired base: the nodes not probed yet, likeliest first
        self.queues: dict[str, list[str]] = {}
        self.probes: dict[str, list[Candidate]] = {}  # per repaired base: its probes so far
        # (base, node set) a repair candidate kept float
        self.tried: set[tuple[str, frozenset[str]]] = set()
        self.budget = Budget(self.settings.max_candidates, self.settings.seconds)
        # grid combinations not built: pruned for the ISA, or dominated
        self.skipped: list[NotBuilt] = []

    # -- the search --------------------------------------------------------------------------------

    def run(self) -> None:
        for candidate in self._grid_candidates():
            if self._over_budget():
                break
            if self._dominated(candidate):
                continue
            if self._build(candidate) and self._checked(candidate) is not None:
                # misses too: the fastest misses are the ones worth repairing
                self._timed(candidate)
        failing = sorted(
            (c for c in self.candidates if c.passed is False and c.speedup),
            key=lambda c: -(c.speedup or 0),
        )
        # the likeliest culprits of every base first, then the rest
        for limit in (CULPRIT_PROBES, None):
            for base in failing[: self.settings.repair]:
                best = self.best()
                if best is not None and (base.speedup or 0) <= (best.speedup or 0) * (
                    1 + self.settings.tie
                ):
                    break  # keeping nodes in float only slows a model down: it cannot beat the best any more
                if self._repair(base, limit):
                    break

    def _grid_candidates(self) -> list[Candidate]:
        found = []
        for family in FAMILIES:
            if family not in self.settings.families:
                continue
            stage_cls = self.steps.stage_type(FAMILIES[family])
            varying = search_space.varying(self.settings.space(family), stage_cls.params_schema)
            tables: list[int | None] = (
                list(range(len(self.tables))) if family == "static" else [None]
            )
            if family == "static" and not tables:
                self.ctx.log("static candidates skipped: no calibration tables given")
                continue
            grid = search_space.grid(self.settings.space(family), stage_cls.params_schema)
            combinations, pruned = search_space.admitted(grid, self.ctx.env["target_isa"])
            self.skipped += [
                {"family": family, "knobs": {k: c[k] for k in varying}, "why": why}
                for c, why in pruned
            ]
            starts = range(len(self.models))
            ranked = [
                (search_space.rank(c, self.ctx.env["target_isa"]), start, table, c)
                for start, table, c in itertools.product(starts, tables, combinations)
            ]
            ranked.sort(key=lambda r: r[:3])  # likeliest first, over every model and table
            found += [
                Candidate("", family, start, table, {k: c[k] for k in varying}, c)
                for _, start, table, c in ranked
            ]
        return found

    def _dominated(self, c: Candidate) -> bool:
        """Whether a passing candidate of the same model and family runs on a kernel as fast."""
        for other in self.candidates:
            if (
                other.passed
                and other.family == c.family
                and other.start == c.start
                and search_space.dominated(c.params, other.params, self.ctx.env["target_isa"])
            ):
                self.skipped.append(
                    {
                        "family": c.family,
                        "model": self._model_name(c.start),
                        "knobs": c.knobs,
                        "why": f"no faster than {other.id}, which meets the target",
                    }
                )
                return True
        return False

    def _repair(self, base: Candidate, limit: int | None) -> bool:
        """Probe the base's next `limit` nodes (all that are left: None), likeliest culprits first, each kept in
        float alone; rank every probe so far by how much it helped, then keep the most harmful nodes in float,
        one more at a time, until the gates are met. True when a repaired candidate met them."""
        queue = self.queues.setdefault(base.id, self._culprits_first(base))
        probes = self.probes.setdefault(base.id, [])
        for node in queue[:limit] if limit is not None else list(queue):
            queue.remove(node)
            if self._over_budget():
                break  # rank what was probed; the repairs below stop at the budget too
            probe = self._derived(base, [node], "probe")
            if self._build(probe) and self._checked(probe):
                self._timed(probe)
                # one node in float is enough; nothing excluding more nodes can be faster
                return True
            probes.append(probe)
        ranked = sorted((p for p in probes if p.score is not None), key=lambda p: -(p.score or 0))
        self.rankings[base.id] = [(p.excluded[0], p.score) for p in ranked]
        order = [p.excluded[0] for p in ranked]
        for count in range(2, min(self.settings.max_excluded, len(order)) + 1):
            if self._over_budget():
                return False
            if (base.id, frozenset(order[:count])) in self.tried:
                continue
            self.tried.add((base.id, frozenset(order[:count])))
            candidate = self._derived(base, order[:count], "repair")
            if self._build(candidate) and self._checked(candidate):
                self._timed(candidate)
                return True
        return False

    def _culprits_first(self, base: Candidate) -> list[str]:
        """The base's quantized nodes, those where error enters first (as a quantization_debug step ranks
        them), so the probe budget goes to the likeliest culprits, not to the first nodes of the graph."""
        assert base.model is not None
        labels: dict[str, str | list[str]] = {
            "reference": self._model_name(base.start),
            "model": base.id,
            "data": "data",
        }
        ranked = [
            c.node
            for c in ranked_culprits(
                self.steps,
                self.models[base.start],
                base.model,
                self.data,
                labels,
                log=self.ctx.log,
                pre_process=quantizer_pre_process(base.family, base.params),
            )
        ]
        # Any node the ranking names, not only those of the op types ORT quantizes itself: a Concat or a Sigmoid
        # between quantized neighbours is quantized too, and is often where the error enters (a detector's head).
        first = list(dict.fromkeys(ranked))
        self.culprits[base.id] = first[:10]
        return first + [n for n in base.quantized_nodes if n not in set(first)]

    def _derived(self, base: Candidate, excluded: list[str], role: str) -> Candidate:
        params = kept_float(base.params, excluded)
        return Candidate(
            "", base.family, base.start, base.calibration, base.knobs, params, excluded, role
        )

    def _over_budget(self) -> bool:
        return self.budget.over(len(self.candidates))

    # -- the result --------------------------------------------------------------------------------

    def best(self) -> Candidate | None:
        timed = [c for c in self.candidates if c.passed and c.speedup]
        if not timed:
            return None
        fastest = max(c.speedup or 0 for c in timed)
        close = [c for c in timed if (c.speedup or 0) >= fastest * (1 - self.settings.tie)]
        return max(close, key=lambda c: (c.score or 0, c.speedup or 0))

    def finish(self) -> StageResult:
        return search_result.finish(self)
