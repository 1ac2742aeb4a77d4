"""Metric names checked before anything runs: each stage says which per-model metrics its metrics outputs
will carry (Stage.metric_names) and checks the names it uses against its own and its inputs' (Stage.
check_metrics), so a gate or a select constraint on a misspelt or absent metric fails `engine validate`
instead of a run an hour later."""

from __future__ import annotations

from pathlib import Path

from ortflow.engine.contracts.metric import Better, KnownMetrics
from ortflow.engine.contracts.stage import ArtifactKind
from ortflow.engine.contracts.types import StageSpec
from ortflow.engine.leaves.errors import Problem
from ortflow.engine.leaves.yamlsource import SourceMap


def metric_problems(
    stages: dict[str, StageSpec], input_paths: dict[str, Path], valid: set[str], source: SourceMap
) -> list[Problem]:
    """Problems with the metric names of the stages whose parameters are valid (`valid`)."""
    provided: dict[str, dict[str, Better] | None] = {}
    for name in valid:
        spec = stages[name]
        provided[name] = spec.stage_cls().metric_names(spec.params, _files(spec, input_paths))
    problems = []
    for name in sorted(valid):
        spec = stages[name]
        known = KnownMetrics(own=provided[name], inputs=_upstream(spec, provided))
        for message in spec.stage_cls().check_metrics(spec.params, known):
            problems.append(
                Problem(
                    f"stage '{name}' ({spec.stage_cls.type}): {message}",
                    source.locate(("stages", name, "with")),
                )
            )
    return problems


def _files(spec: StageSpec, input_paths: dict[str, Path]) -> dict[str, Path]:
    """Its single-reference ports bound to a file of the recipe (`inputs.<name>`)."""
    files = {}
    for port, binding in spec.inputs.items():
        if (
            not binding.many
            and binding.refs[0].source == "inputs"
            and binding.refs[0].name in input_paths
        ):
            files[port] = input_paths[binding.refs[0].name]
    return files


def _upstream(
    spec: StageSpec, provided: dict[str, dict[str, Better] | None]
) -> dict[str, dict[str, Better] | None]:
    """For each of its metrics ports fed by one stage, what that stage's results carry."""
    found: dict[str, dict[str, Better] | None] = {}
    for port, binding in spec.inputs.items():
        declared = spec.stage_cls.input_port(port)
        if declared is None or declared.kind is not ArtifactKind.METRICS or binding.many:
            continue
        ref = binding.refs[0]
        found[port] = None if ref.is_source else provided.get(ref.source)
    return found
