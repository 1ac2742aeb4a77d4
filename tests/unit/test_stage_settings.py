"""Typed stage parameters (engine.contracts.params): a stage's settings dataclass stands for its params_schema, and
reads the validated parameters by attribute."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ortflow.api import settings_of, settings_problems
from ortflow.engine.contracts.params import fill_defaults
from ortflow.engine.contracts.registry import installed_stages


def declaring_settings() -> list[str]:
    stages = installed_stages()
    return sorted(n for n in stages.names() if getattr(stages.get(n), "settings", None) is not None)


@pytest.mark.parametrize("name", declaring_settings())
def test_a_stages_settings_agree_with_its_params_schema(name):
    stage_cls = installed_stages().get(name)
    assert settings_problems(stage_cls.settings, stage_cls.params_schema) == []


def test_convert_float16_declares_settings():
    assert "convert_float16" in declaring_settings()


def test_settings_read_the_validated_params_and_a_mismatch_is_named():
    stage_cls = installed_stages().get("convert_float16")
    params = fill_defaults({"op_block_list": ["Resize"]}, stage_cls.params_schema)
    read = settings_of(stage_cls.settings, params)
    assert read.op_block_list == ("Resize",) and read.keep_io_types is True and read.samples == 8

    @dataclass(frozen=True)
    class Drifted:
        keep_io_types: str = "yes"
        samples: int = 4

    problems = settings_problems(Drifted, stage_cls.params_schema)
    assert "field 'keep_io_types' is str, the schema says boolean" in problems
    assert "field 'samples' defaults otherwise than the schema (8)" in problems
    assert "property 'headroom' has no field in Drifted" in problems
