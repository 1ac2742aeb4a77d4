"""A stage type whose hooks receive its settings dataclass, not a mapping of parameters read by key.

The engine calls every stage's hooks with the recipe's parameters (validated, defaults filled in): check(params),
env_facts(params), metric_names(params, files), check_metrics(params, known), same_result(params, ...). A
SettingsStage parses them once, here, into its `settings` (a frozen dataclass that settings_problems holds to its
params_schema) and implements typed hooks that receive that dataclass: a stage reads `settings.tolerance`, never
`params["tolerance"]`, and mypy checks each read. Its run reads them with `self.read(ctx)`. A stage that
subclasses Stage directly keeps working as before (the loaders' counterpart is SettingsLoader)."""

from __future__ import annotations

from pathlib import Path
from typing import Generic, TypeVar

from ortflow.engine.contracts.metric import Better, KnownMetrics
from ortflow.engine.contracts.params import settings_of
from ortflow.engine.contracts.stage import Stage, StageContext
from ortflow.engine.leaves.json_types import Params

S = TypeVar("S")


class SettingsStage(Stage, Generic[S]):
    """Base class of a stage type with typed parameters: set `settings` to its dataclass, implement `run`, and
    override the typed hooks it needs (`problems`, `facts`, `metrics_known`, `metric_problems`,
    `same_values`)."""

    @classmethod
    def parsed(cls, params: Params) -> S:
        """The parameters as the stage's settings (a list arrives as a tuple)."""
        if cls.settings is None:
            raise TypeError(f"{cls.__name__} is a SettingsStage without `settings` (its dataclass)")
        found: S = settings_of(cls.settings, params)
        return found

    def read(self, ctx: StageContext) -> S:
        """The running stage's parameters as its settings."""
        return self.parsed(dict(ctx.params))

    # the typed hooks: each as the Stage hook of (nearly) the same name, from the settings
    def problems(self, settings: S) -> list[str]:
        """As Stage.check."""
        return []

    def facts(self, settings: S) -> tuple[str, ...]:
        """As Stage.env_facts."""
        return ()

    def metrics_known(self, settings: S, files: dict[str, Path]) -> dict[str, Better] | None:
        """As Stage.metric_names."""
        return None

    def metric_problems(self, settings: S, known: KnownMetrics) -> list[str]:
        """As Stage.check_metrics."""
        return []

    @classmethod
    def same_values(
        cls, settings: S, port: str, ours: tuple[float, ...], locked: tuple[float, ...]
    ) -> bool:
        """As Stage.same_result."""
        return False

    # the Stage hooks the engine calls, each parsing the parameters into the settings once
    def check(self, params: Params) -> list[str]:
        return self.problems(self.parsed(params))

    def env_facts(self, params: Params) -> tuple[str, ...]:
        return self.facts(self.parsed(params))

    def metric_names(self, params: Params, files: dict[str, Path]) -> dict[str, Better] | None:
        return self.metrics_known(self.parsed(params), files)

    def check_metrics(self, params: Params, known: KnownMetrics) -> list[str]:
        return self.metric_problems(self.parsed(params), known)

    @classmethod
    def same_result(
        cls, params: Params, port: str, ours: tuple[float, ...], locked: tuple[float, ...]
    ) -> bool:
        return cls.same_values(cls.parsed(params), port, ours, locked)
