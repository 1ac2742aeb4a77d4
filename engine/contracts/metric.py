"""The contract of an accuracy metric: what it is called, which way is better, what it reads, and how it is
computed from a reference model's and a candidate's outputs on the same feeds.

Built-in and third-party metrics register under the `ortflow.metrics` entry-point group; a recipe-local
`.py` file is wrapped into the same shape. validate_accuracy computes them, and its gates, quantize_search's
accuracy target and select's constraints and objectives all use the names declared here, checked by
`engine validate` before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ortflow.engine.leaves.json_types import Json, JsonObject

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import Feed

Outputs = dict[str, list[Any]]  # output name -> one numpy array per feed


class Better(str, Enum):
    """Which way a metric improves: a `min:` bound suits a HIGHER metric, a `max:` bound a LOWER one."""

    HIGHER = "higher"
    LOWER = "lower"


@dataclass(frozen=True)
class MetricName:
    """One number a metric reports."""

    name: str
    better: Better
    description: str = ""


class Metric:
    """Base class of a task metric: compares a candidate's outputs with the reference's.

    Subclasses set `type` (the entry-point name, used as `metrics: {<type>: {params}}` in validate_accuracy),
    `names` (every number `compute` returns) and `params_schema`. Import heavy libraries inside `compute`.
    """

    type: ClassVar[str]
    description: ClassVar[str] = ""
    names: ClassVar[tuple[MetricName, ...]] = ()
    params_schema: ClassVar[JsonObject] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }

    def reads(self, params: Mapping[str, Json]) -> tuple[str, ...]:
        """The outputs it reads (each must exist in the reference); empty when it reads every output."""
        return ()

    def check(self, params: Mapping[str, Json]) -> list[str]:
        """Problems with a combination of parameters that a JSON Schema cannot express."""
        return []

    def compute(
        self, reference: Outputs, candidate: Outputs, feeds: list[Feed], params: Mapping[str, Json]
    ) -> dict[str, float]:
        """Every declared name's value for this candidate."""
        raise NotImplementedError

    @classmethod
    def directions(cls) -> dict[str, Better]:
        return {n.name: n.better for n in cls.names}


@dataclass(frozen=True)
class KnownMetrics:
    """The metric names a stage may use, known before anything runs: those it computes itself (from its
    parameters and the recipe files it is given) and those each of its metrics inputs carries (None where
    the upstream stage cannot say before it runs)."""

    own: dict[str, Better] | None = None
    inputs: dict[str, dict[str, Better] | None] = field(default_factory=dict)


def bound_problems(
    minimum: Mapping[str, float],
    maximum: Mapping[str, float],
    names: dict[str, Better] | None,
    others: tuple[str, ...] = (),
) -> list[str]:
    """What is wrong with the metric names of `min:`/`max:` bounds (and `others`, e.g. an objective) given the
    names available: an unknown name (with the closest known one), or a bound on the wrong side (`min:` on
    an error, which is better lower). Nothing when the names cannot be known before a run (None)."""
    import difflib

    if names is None:
        return []
    problems = []
    used = [("min", m) for m in minimum] + [("max", m) for m in maximum] + [("", m) for m in others]
    for side, metric in used:
        where = f"{side}: " if side else ""
        if metric not in names:
            close = difflib.get_close_matches(metric, list(names), n=1, cutoff=0.6)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else f"known here: {', '.join(sorted(names))}"
            )
            problems.append(f"{where}no metric '{metric}' — {hint}")
        elif side and names[metric] is not (Better.HIGHER if side == "min" else Better.LOWER):
            other = "max" if side == "min" else "min"
            problems.append(
                f"{where}{metric} is better {names[metric].value}, so a bound on it belongs under `{other}:`"
            )
    return problems
