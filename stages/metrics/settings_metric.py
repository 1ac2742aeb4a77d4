"""A metric type whose hooks receive its settings dataclass, as a SettingsStage's do (ortflow.api.SettingsStage).

validate_accuracy calls every metric's hooks with the metric's `with:` block (validated, defaults filled in):
reads(params), check(params), compute(..., params). A SettingsMetric parses that block once, here, into its
`settings` (a frozen dataclass standing for its params_schema; tests/test_task_metrics.py holds the built-ins'
to it) and implements typed hooks that receive the dataclass, so a metric reads `settings.outputs`, never
`params["outputs"]`, and mypy checks each read. A metric that subclasses Metric directly works as before."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from ortflow.api import Feed, Metric, Outputs, Params, settings_of

S = TypeVar("S")


class SettingsMetric(Metric, Generic[S]):
    """Base class of a built-in metric with typed parameters: set `settings` to its dataclass, implement
    `measure`, and override `outputs_read` and `problems` where it needs them."""

    settings: ClassVar[type[Any]]  # its dataclass (a ClassVar cannot name S: the hooks say it)

    @classmethod
    def parsed(cls, params: Params) -> S:
        """The `with:` block as the metric's settings (a list arrives as a tuple)."""
        found: S = settings_of(cls.settings, params)
        return found

    # the typed hooks: each as the Metric hook it stands for, from the settings
    def outputs_read(self, settings: S) -> tuple[str, ...]:
        """As Metric.reads."""
        return ()

    def problems(self, settings: S) -> list[str]:
        """As Metric.check."""
        return []

    def measure(
        self, reference: Outputs, candidate: Outputs, feeds: list[Feed], settings: S
    ) -> dict[str, float]:
        """As Metric.compute."""
        raise NotImplementedError

    # the Metric hooks validate_accuracy calls, each parsing the block into the settings once
    def reads(self, params: Params) -> tuple[str, ...]:
        return self.outputs_read(self.parsed(params))

    def check(self, params: Params) -> list[str]:
        return self.problems(self.parsed(params))

    def compute(
        self, reference: Outputs, candidate: Outputs, feeds: list[Feed], params: Params
    ) -> dict[str, float]:
        return self.measure(reference, candidate, feeds, self.parsed(params))
