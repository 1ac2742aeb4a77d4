"""quantize_search's search procedure: build every grid candidate through cached steps, check and time it, and
when the fastest miss the gates, rank nodes by harm and keep the most harmful in float until they are met.
The stage (stages/quantize_search.py) declares the ports and parameters; this module does the searching."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ortflow.api import (
    AccuracyResults,
    Artifact,
    BenchmarkResults,
    GateFailed,
    StageContext,
    StageError,
    StageResult,
    Steps,
    fill_defaults,
    read_document,
    stage_type,
)
from ortflow.stages.measurement.accuracy_gates import judged, verdict_data
from ortflow.stages.search import space as search_space
from ortflow.stages.search.candidates import (
    Candidate,
    candidate_row,
    pareto,
    search_report,
    shown_values,
)

FAMILIES = {
    "dynamic": "quantize_dynamic",
    "static": "quantize_static",
    "weights": "quantize_weights",
}
# per repaired base, before the other bases get theirs: the culprit is usually among them
CULPRIT_PROBES = 6


class Search:
    """One search: candidates are built, checked and timed through cached steps."""

    def __init__(self, ctx: StageContext):
        self.ctx, self.params = ctx, ctx.params
        assert ctx.steps is not None  # the runner always hands a stage its steps
        self.steps: Steps = ctx.steps
        self.reference = ctx.artifact("reference")
        self.models: tuple[Artifact, ...] = ctx.artifacts("models")
        self.tables: tuple[Artifact, ...] = ctx.artifacts("calibrations")
        self.data = ctx.artifact("data")
        self.data_source = verdict_data(ctx, "data", ("calibrations", "models"))
        self.candidates: list[Candidate] = []
        # base id -> (node, margin when kept float)
        self.rankings: dict[str, list[tuple[str, float | None]]] = {}
        # base id -> nodes where its error enters, worst first
        self.culprits: dict[str, list[str]] = {}
        # per repaired base: the nodes not probed yet, likeliest first
        self.queues: dict[str, list[str]] = {}
        self.probes: dict[str, list[Candidate]] = {}  # per repaired base: its probes so far
        # (base, node set) a repair candidate kept float
        self.tried: set[tuple[str, frozenset[str]]] = set()
        self.started = time.monotonic()
        # grid combinations not built: pruned for the ISA, or dominated
        self.skipped: list[dict[str, Any]] = []
        self.stopped = ""  # why the search ended early, if it did
        self.out_of_time = False  # a time-budget stop is no verdict: it must not be cached as one

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
            for base in failing[: self.params["repair"]]:
                best = self.best()
                if best is not None and (base.speedup or 0) <= (best.speedup or 0) * (
                    1 + self.params["tie"]
                ):
                    break  # keeping nodes in float only slows a model down: it cannot beat the best any more
                if self._repair(base, limit):
                    break

    def _grid_candidates(self) -> list[Candidate]:
        found = []
        for family in FAMILIES:
            if family not in self.params["families"]:
                continue
            stage_cls = self.steps.stage_type(FAMILIES[family])
            varying = search_space.varying(self.params[family], stage_cls.params_schema)
            tables: list[int | None] = (
                list(range(len(self.tables))) if family == "static" else [None]
            )
            if family == "static" and not tables:
                self.ctx.log("static candidates skipped: no calibration tables given")
                continue
            grid = search_space.grid(self.params[family], stage_cls.params_schema)
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
        for count in range(2, min(self.params["max_excluded"], len(order)) + 1):
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
        try:
            assert base.model is not None
            inputs = {"reference": self.models[base.start], "model": base.model, "data": self.data}
            labels = {"reference": self._model_name(base.start), "model": base.id, "data": "data"}
            step = self.steps.run("quantization_debug", {"samples": 4, "top": 50}, inputs, labels)
            ranked = [n["node"] for n in step.document("report")["nodes"]]
        except StageError as exc:
            # a model the debug run cannot follow: probe in graph order, as before
            self.ctx.log(f"{base.id}: no error ranking ({exc}); probing nodes in graph order")
            ranked = []
        # Any node the ranking names, not only those of the op types ORT quantizes itself: a Concat or a Sigmoid
        # between quantized neighbours is quantized too, and is often where the error enters (a detector's head).
        first = list(dict.fromkeys(ranked))
        self.culprits[base.id] = first[:10]
        return first + [n for n in base.quantized_nodes if n not in set(first)]

    def _derived(self, base: Candidate, excluded: list[str], role: str) -> Candidate:
        params = dict(base.params)
        params["nodes_to_exclude"] = sorted(
            set(base.params.get("nodes_to_exclude", [])) | set(excluded)
        )
        return Candidate(
            "", base.family, base.start, base.calibration, base.knobs, params, excluded, role
        )

    def _over_budget(self) -> bool:
        elapsed = (
            time.monotonic() - self.started
        )  # a candidate takes about the mean so far: none ends past it
        if len(self.candidates) >= self.params["max_candidates"]:
            self.stopped = f"max_candidates ({self.params['max_candidates']}) reached"
        elif elapsed + elapsed / max(len(self.candidates), 1) > self.params["seconds"]:
            self.stopped, self.out_of_time = f"the {self.params['seconds']} s budget ran out", True
        return bool(self.stopped)

    # -- one candidate -----------------------------------------------------------------------------

    def _build(self, c: Candidate) -> bool:
        c.id = f"c{len(self.candidates) + 1:02d}"
        self.candidates.append(c)
        inputs: dict[str, Any] = {"model": self.models[c.start]}
        labels: dict[str, Any] = {"model": self._model_name(c.start)}
        if c.calibration is not None:
            inputs["calibration"] = self.tables[c.calibration]
            labels["calibration"] = self._table_name(c.calibration)
        try:
            step = self.steps.run(FAMILIES[c.family], c.params, inputs, labels)
        except StageError as exc:
            # e.g. a table calibrated on another graph: this pairing does not exist
            c.note = str(exc).removeprefix(f"step {FAMILIES[c.family]} failed: ")
            self._say(c, f"not built: {c.note}")
            return False
        c.model = step.outputs["model"]
        c.quantized_nodes = step.document("metrics").get("quantized_nodes", [])
        return True

    def _check(self, c: Candidate) -> bool:
        """Accuracy without gates, so a re-run with another target reuses the check; the verdict is
        validate_accuracy's own, on the values it recorded (6 significant digits)."""
        assert c.model is not None
        accuracy = accuracy_params(self.params)
        ungated = {k: v for k, v in accuracy.items() if k not in ("min", "max")}
        inputs = {"reference": self.reference, "candidates": [c.model], "data": self.data}
        if self.ctx.has("metric"):
            inputs["metric"] = self.ctx.artifact("metric")
        labels = {"reference": "reference", "candidates": [c.id]}
        step = self.steps.run("validate_accuracy", ungated, inputs, labels)
        c.values, c.score, c.passed = judged(
            read_document(step.path("results"), AccuracyResults), accuracy
        )
        if c.role != "probe" or c.passed:
            self._say(
                c,
                ", ".join(f"{k} {v:.4f}" for k, v in c.values.items())
                + (" meets the target" if c.passed else " misses the target"),
            )
        return c.passed

    def _checked(self, c: Candidate) -> bool | None:
        """The verdict, or None when the candidate could not be checked (it stays in the table with a note)."""
        try:
            return self._check(c)
        except StageError as exc:
            c.note = str(exc)
            self._say(c, f"not checked: {c.note}")
            return None

    def _timed(self, c: Candidate) -> None:
        try:
            self._time(c)
        except StageError as exc:
            c.note = str(exc)
            self._say(c, f"not timed: {c.note}")

    def _time(self, c: Candidate) -> None:
        assert c.model is not None
        step = self.steps.run(
            "benchmark",
            self.params["benchmark"],
            {"models": [self.reference, c.model], "data": self.data},
            {"models": ["reference", c.id]},
        )
        rows = read_document(step.path("results"), BenchmarkResults).results
        row = next(r for r in rows[1:] if r.config()[:3] == rows[0].config()[:3])
        c.speedup, c.p50_ms = row.speedup, row.latency_ms.p50
        self._say(c, f"{c.speedup:.2f}x vs reference ({c.p50_ms:.3g} ms p50)")

    def _say(self, c: Candidate, text: str) -> None:
        self.ctx.log(f"{self.ctx.stage_name} {c.id} {self._describe(c)}: {text}")

    # -- the result --------------------------------------------------------------------------------

    def best(self) -> Candidate | None:
        timed = [c for c in self.candidates if c.passed and c.speedup]
        if not timed:
            return None
        fastest = max(c.speedup or 0 for c in timed)
        close = [c for c in timed if (c.speedup or 0) >= fastest * (1 - self.params["tie"])]
        return max(close, key=lambda c: (c.score or 0, c.speedup or 0))

    def finish(self) -> StageResult:
        chosen = self.best()
        front = pareto([c for c in self.candidates if c.speedup and c.score is not None])
        target = self.params["accuracy"]
        document = {
            "gates": {"min": target.get("min", {}), "max": target.get("max", {})},
            "chosen": chosen.id if chosen else None,
            "stopped_early": self.stopped or None,
            "not_built": self.skipped,
            "candidates": [
                candidate_row(c, c in front, self._model_name(c.start), self._table_or_none(c))
                for c in self.candidates
            ],
            "node_ranking": {
                base: [{"node": n, "margin_when_kept_float": v} for n, v in ranked]
                for base, ranked in self.rankings.items()
            },
            "culprits": self.culprits,  # by quantization_debug: the order the probes went in
            "report": search_report(self.candidates, self.rankings, chosen, front, self._describe),
        }
        self.ctx.output_path("search").write_text(json.dumps(document, indent=2), encoding="utf-8")
        tried = f"{len(self.candidates)} candidates"
        if self.stopped:
            tried += f"; stopped early: {self.stopped}"
        metrics = {"candidates": len(self.candidates), "pareto": [c.id for c in front]}
        if chosen is None:
            self._none_chosen(tried, metrics)
        assert chosen is not None and chosen.model is not None
        if Path(chosen.model.path).is_dir():  # a model over 2 GB: a folder with its external data
            shutil.copytree(chosen.model.path, self.ctx.output_path("model"))
        else:
            shutil.copyfile(chosen.model.path, self.ctx.output_path("model"))
        metrics.update({"chosen": chosen.id, "chosen_speedup": chosen.speedup})
        metrics.update({f"chosen_{k}": v for k, v in chosen.values.items()})
        summary = (
            f"{chosen.id} {self._describe(chosen)}: {shown_values(chosen)}, "
            f"{chosen.speedup:.2f}x vs reference ({tried})"
        )
        return StageResult(summary=summary, metrics=metrics, data_source=self.data_source)

    def _none_chosen(self, tried: str, metrics: dict[str, Any]) -> None:
        """No candidate met the gates: say why (out of time, or the closest one) and what to change."""
        if self.out_of_time:
            raise StageError(
                f"no candidate met the gates before {self.stopped} ({len(self.candidates)} candidates) — "
                "run again to go on from the cached candidates, or raise `seconds`"
            )
        scored = [c for c in self.candidates if c.score is not None]
        closest = max(scored, key=lambda c: c.score or 0, default=None)
        hint = ""
        if closest:
            hint = f"; closest {closest.id} {self._describe(closest)}: {shown_values(closest)}"
        raise GateFailed(
            f"no candidate met the gates ({tried}){hint} — widen the search (families, "
            "dynamic/static choices, max_excluded, repair) or relax the target",
            metrics=metrics,
            data_source=self.data_source,
        )

    def _short(self, node: str) -> str:
        """A node name without the prefix all quantized nodes share (e.g. "/model/model.0/auto_model/")."""
        if not hasattr(self, "_prefix"):
            names = {
                n for c in self.candidates for n in c.quantized_nodes if "/" in n
            }  # exporter paths
            common = os.path.commonprefix(sorted(names)) if len(names) > 1 else ""
            self._prefix = common[: common.rfind("/") + 1]
        return node.removeprefix(self._prefix) or node

    def _describe(self, c: Candidate, names: bool = True) -> str:
        parts = [c.family, f"from {self._model_name(c.start)}"]
        if c.calibration is not None:
            parts.append(f"table {self._table_name(c.calibration)}")
        parts += [f"{k}={v}" for k, v in c.knobs.items()]
        if c.excluded and names:
            if len(c.excluded) > 1:
                parts.append(f"{len(c.excluded)} kept float")
            else:
                parts.append(f"kept float {self._short(c.excluded[0])}")
        return " ".join(parts)

    def _model_name(self, index: int) -> str:
        return self.ctx.label("models", index)

    def _table_name(self, index: int) -> str:
        return self.ctx.label("calibrations", index)

    def _table_or_none(self, c: Candidate) -> str | None:
        return self._table_name(c.calibration) if c.calibration is not None else None


def accuracy_params(params: dict[str, Any]) -> dict[str, Any]:
    """The accuracy checks' parameters: the target as given, with validate_accuracy's defaults filled in."""
    return fill_defaults(params["accuracy"], stage_type("validate_accuracy").params_schema)
