"""One quantize_search candidate at a time: built by a quantize step, checked by validate_accuracy against the
gates, timed by benchmark against the reference, each a cached step; and how a candidate is named in logs and
reports. The searches (quantization_search.Search, partial_search.PartialSearch) decide which to build."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ortflow.api import (
    AccuracyResults,
    Artifact,
    BenchmarkResults,
    Bounds,
    Json,
    StageContext,
    StageError,
    Steps,
    fill_defaults,
    read_document,
    stage_type,
)
from ortflow.stages.measurement.accuracy_gates import judged
from ortflow.stages.search.candidates import Candidate

FAMILIES = {
    "dynamic": "quantize_dynamic",
    "static": "quantize_static",
    "weights": "quantize_weights",
}


class CandidateSteps:
    """Builds, checks and times candidates through the stage's cached steps; keeps every one in `candidates`."""

    # quantize steps get the held-out data for their sanity check (every output, state included, not only the
    # ones the task metric reads); without it they check random feeds and only warn
    sanity_on_data = False

    def __init__(
        self,
        ctx: StageContext,
        models: tuple[Artifact, ...],
        tables: tuple[Artifact, ...],
        accuracy: Mapping[str, Json],
        benchmark: Mapping[str, Json] | None = None,
    ):
        # the search's own settings are read by its subclass; these two blocks are its steps' parameters
        self.ctx, self.accuracy, self.benchmark = ctx, accuracy, benchmark
        assert ctx.steps is not None  # the runner always hands a stage its steps
        self.steps: Steps = ctx.steps
        self.models, self.tables = models, tables
        self.data = ctx.artifact("data")
        self.candidates: list[Candidate] = []

    @property
    def reference(self) -> Artifact:
        """The float model accuracy and speed are measured against."""
        return self.ctx.artifact("reference")

    def _build(self, c: Candidate) -> bool:
        c.id = f"c{len(self.candidates) + 1:02d}"
        self.candidates.append(c)
        inputs: dict[str, Artifact | list[Artifact]] = {"model": self.models[c.start]}
        labels: dict[str, str | list[str]] = {"model": self._model_name(c.start)}
        if c.calibration is not None:
            inputs["calibration"] = self.tables[c.calibration]
            labels["calibration"] = self._table_name(c.calibration)
        if self.sanity_on_data and c.family in ("static", "dynamic"):
            sanity = "sanity_data" if self.ctx.has("sanity_data") else "data"
            inputs["data"], labels["data"] = self.ctx.artifact(sanity), sanity
        try:
            step = self.steps.run(FAMILIES[c.family], c.params, inputs, labels)
        except StageError as exc:
            # e.g. a table calibrated on another graph: this pairing does not exist
            c.note = str(exc).removeprefix(f"step {FAMILIES[c.family]} failed: ")
            self._say(c, f"not built: {c.note}")
            return False
        c.model = step.outputs["model"]
        c.gate_failed = step.gate_failed
        c.quantized_nodes = _quantized_nodes(step.document("metrics"))
        return True

    def _check(self, c: Candidate) -> bool:
        """Accuracy without gates, so a re-run with another target reuses the check; the verdict is
        validate_accuracy's own, on the values it recorded (6 significant digits)."""
        assert c.model is not None
        accuracy = accuracy_target(self.accuracy)
        ungated = {k: v for k, v in accuracy.items() if k not in ("min", "max")}
        inputs: dict[str, Artifact | list[Artifact]] = {
            "reference": self.reference,
            "candidates": [c.model],
            "data": self.data,
        }
        if self.ctx.has("metric"):
            inputs["metric"] = self.ctx.artifact("metric")
        labels: dict[str, str | list[str]] = {"reference": "reference", "candidates": [c.id]}
        step = self.steps.run("validate_accuracy", ungated, inputs, labels)
        gates = Bounds(accuracy["min"], accuracy["max"])
        c.values, c.score, c.passed = judged(
            read_document(step.path("results"), AccuracyResults), gates
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
        # only a search that times its candidates (quantize_search) was given `benchmark`
        assert c.model is not None and self.benchmark is not None
        step = self.steps.run(
            "benchmark",
            self.benchmark,
            {"models": [self.reference, c.model], "data": self.data},
            {"models": ["reference", c.id]},
        )
        rows = read_document(step.path("results"), BenchmarkResults).results
        row = next(r for r in rows[1:] if r.config()[:3] == rows[0].config()[:3])
        c.speedup, c.p50_ms = row.speedup, row.latency_ms.p50
        self._say(c, f"{c.speedup:.2f}x vs reference ({c.p50_ms:.3g} ms p50)")

    def _say(self, c: Candidate, text: str) -> None:
        self.ctx.log(f"{self.ctx.stage_name} {c.id} {self._describe(c)}: {text}")

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


def accuracy_params(params: Mapping[str, object]) -> dict[str, Any]:
    """The accuracy checks' parameters from a search stage's validated parameters (its `accuracy` block)."""
    accuracy = params["accuracy"]
    assert isinstance(accuracy, dict)  # the params_schema makes it an object
    return accuracy_target(accuracy)


def accuracy_target(accuracy: Mapping[str, Json]) -> dict[str, Any]:
    """The accuracy checks' parameters: the target as given, with validate_accuracy's defaults filled in."""
    return fill_defaults(dict(accuracy), stage_type("validate_accuracy").params_schema)


def _quantized_nodes(metrics: Json) -> list[str]:
    """The nodes a quantize step's metrics document says it quantized (none listed: empty)."""
    nodes = metrics.get("quantized_nodes") if isinstance(metrics, dict) else None
    return [str(node) for node in nodes] if isinstance(nodes, list) else []
