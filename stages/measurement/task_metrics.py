"""The metrics validate_accuracy computes besides its built-in comparisons: installed metric types named
under `metrics:` (built-in ones such as detection and exact, or a package's under `ortflow.metrics`), and a
recipe-local `.py` file.

A metric file declares its names and directions as a literal, read without running the file so that
`engine validate` can check the gates that use them:

    METRICS = {"det_f1": "higher", "box_error": "lower"}

    def metric(reference, candidate, feeds):   # outputs as {name: [array per feed]}
        return {"det_f1": ..., "box_error": ...}
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortflow.api import (
    Better,
    Json,
    Metric,
    OrtflowError,
    Outputs,
    StageError,
    fill_defaults,
    installed_metrics,
    metric_type,
    params_problems,
)

FILE_GROUP = "python"  # where a metric file's values are kept in the results


@dataclass(frozen=True)
class Configured:
    """One entry of `metrics:`, its parameters filled in."""

    metric: Metric
    params: Mapping[str, Json]  # validated against the metric's params_schema; it reads them


def problems(metrics: Mapping[str, Json]) -> list[str]:
    """What is wrong with a `metrics:` mapping (unknown types, their parameters): the user's block, metric type
    -> its parameters, free JSON until each metric's schema has checked them here."""
    found = []
    registry = installed_metrics()
    for name, params in metrics.items():
        if name not in registry:
            found.append(
                f"metrics: unknown metric '{name}' (installed: {', '.join(registry.names())})"
            )
            continue
        try:
            cls = metric_type(name)
        except OrtflowError as exc:  # a broken plugin: say which metric
            found.append(f"metrics: {name}: {exc}")
            continue
        found += [
            f"metrics: {name}: {p}"
            for p in params_problems(cls, params if isinstance(params, dict) else {})
        ]
    return found


def configured(metrics: Mapping[str, Json]) -> list[Configured]:
    entries = []
    for name, params in metrics.items():
        cls = metric_type(name)
        given = params if isinstance(params, dict) else {}  # `name:` alone: its defaults
        entries.append(Configured(cls(), fill_defaults(given, cls.params_schema)))
    return entries


def directions(metrics: Mapping[str, Json]) -> dict[str, Better]:
    """The names the `metrics:` entries report."""
    found: dict[str, Better] = {}
    for name in metrics:
        if name in installed_metrics():
            found.update(metric_type(name).directions())
    return found


def declared(path: Path) -> dict[str, Better]:
    """A metric file's `METRICS = {name: "higher" | "lower"}`, read as a literal (the file is not run)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise StageError(f"the metric file {path.name} cannot be read as Python: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "METRICS" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if (
                isinstance(value, dict)
                and value
                and all(isinstance(k, str) and v in ("higher", "lower") for k, v in value.items())
            ):
                return {k: Better(v) for k, v in value.items()}
    raise StageError(
        f'the metric file {path.name} declares no METRICS — add e.g. METRICS = {{"det_f1": "higher"}} '
        "(a literal naming every value the function returns and which way is better)"
    )


def run_file(
    path: Path, function_name: str, reference: Outputs, candidate: Outputs, feeds: list[dict]
) -> dict[str, float]:
    """The metric file's function on one candidate; its values must be exactly the declared names."""
    names = declared(path)
    module_spec = importlib.util.spec_from_file_location(
        f"ortflow_metric_{abs(hash(str(path)))}", path
    )
    if module_spec is None or module_spec.loader is None:
        raise StageError(f"the metric input {path.name} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    _user_code(function_name, module_spec.loader.exec_module, module)
    function = _user_code(function_name, getattr, module, function_name, None)
    if not callable(function):
        raise StageError(f"the metric file has no function '{function_name}' — set metric_function")
    values = _user_code(function_name, function, reference, candidate, feeds)
    if not isinstance(values, dict):
        raise StageError(f"{function_name}() must return a mapping of metric names to numbers")
    if set(values) != set(names):
        raise StageError(
            f"{function_name}() returned {sorted(values)} but METRICS declares {sorted(names)} — make them the same"
        )
    return {str(k): float(v) for k, v in values.items()}


def run_configured(
    entry: Configured, reference: Outputs, candidate: Outputs, feeds: list[dict]
) -> dict[str, float]:
    missing = [o for o in entry.metric.reads(entry.params) if o not in reference]
    if missing:
        raise StageError(
            f"metrics: {entry.metric.type} reads output {', '.join(missing)}, which the reference does not "
            f"have (it has {', '.join(reference)})"
        )
    values = entry.metric.compute(reference, candidate, feeds, entry.params)
    return {k: float(v) for k, v in values.items()}


def _user_code(function_name: str, call: Any, *args: Any) -> Any:
    """`call(*args)` on the metric file's code: whatever it raises becomes a StageError that names the metric
    function, except a StageError of its own (from ortflow.api), which already says what is wrong."""
    try:
        return call(*args)
    except StageError:
        raise
    except (
        Exception
    ) as exc:  # user code: any failure becomes the stage's error, naming the function
        raise StageError(
            f"the metric function {function_name}() failed: {type(exc).__name__}: {exc}"
        ) from exc
