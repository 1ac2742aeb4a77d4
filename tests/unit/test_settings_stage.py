"""SettingsStage: the engine's parameter hooks reach a plugin's typed hooks as its settings dataclass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ortflow.api import KnownMetrics, Params, SettingsStage, Stage, params_problems
from ortflow.engine.contracts.metric import Better
from ortflow.engine.contracts.stage import within_tolerance


@dataclass(frozen=True)
class Knobs:
    tolerance: float = 0.5
    names: tuple[str, ...] = ()


class Typed(SettingsStage[Knobs]):
    type = "typed_plugin"
    params_schema = {
        "type": "object",
        "properties": {
            "tolerance": {"type": "number", "default": 0.5},
            "names": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "additionalProperties": False,
    }
    settings = Knobs
    seen: list[Knobs] = []

    def problems(self, settings: Knobs) -> list[str]:
        self.seen.append(settings)
        return [f"tolerance {settings.tolerance} is over 1"] if settings.tolerance > 1 else []

    def facts(self, settings: Knobs) -> tuple[str, ...]:
        return ("onnxruntime",) if settings.tolerance < 0.1 else ()

    def metrics_known(self, settings: Knobs, files: dict[str, Path]) -> dict[str, Better] | None:
        return {name: Better.HIGHER for name in settings.names}

    def metric_problems(self, settings: Knobs, known: KnownMetrics) -> list[str]:
        return [f"unknown metric {n}" for n in settings.names if n != "f1"]

    @classmethod
    def same_values(
        cls, settings: Knobs, port: str, ours: tuple[float, ...], locked: tuple[float, ...]
    ) -> bool:
        return all(abs(a - b) <= settings.tolerance for a, b in zip(ours, locked))


def test_check_parses_the_parameters_once_into_the_settings_with_defaults_filled() -> None:
    Typed.seen.clear()
    assert params_problems(Typed, {"tolerance": 2}) == ["tolerance 2 is over 1"]
    assert params_problems(Typed, {"names": ["f1"]}) == []
    assert Typed.seen == [Knobs(tolerance=2), Knobs(names=("f1",))]  # a list arrives as a tuple


def test_every_engine_hook_reaches_its_typed_form() -> None:
    stage = Typed()
    params: Params = {"tolerance": 0.05, "names": ["f1", "acc"]}
    assert stage.env_facts(params) == ("onnxruntime",)
    assert stage.metric_names(params, {}) == {"f1": Better.HIGHER, "acc": Better.HIGHER}
    assert stage.check_metrics(params, KnownMetrics()) == ["unknown metric acc"]
    assert within_tolerance(Typed, {"tolerance": 0.2}, {"m": (1.0,)}, {"m": (1.1,)})
    assert not within_tolerance(Typed, {"tolerance": 0.05}, {"m": (1.0,)}, {"m": (1.1,)})


def test_a_settings_stage_without_its_dataclass_says_so() -> None:
    class Bare(SettingsStage[Knobs]):
        type = "bare_plugin"

    with pytest.raises(TypeError, match="Bare is a SettingsStage without `settings`"):
        Bare().check({})
    assert issubclass(Bare, Stage)
