"""Typed stage parameters (engine.contracts.params): a stage's settings dataclass stands for its params_schema, and
reads the validated parameters by attribute."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
from conftest import two_stage_recipe

from ortflow.api import settings_of, settings_problems
from ortflow.engine.contracts import params as params_module
from ortflow.engine.contracts.params import KEYED_BUILTINS, KeyedParams, fill_defaults, stage_params
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


def test_a_plugin_reading_params_by_key_is_told_once_naming_ctx_settings(project, cli, monkeypatch):
    """The deprecation path: the test plugin's concat stage reads ctx.params["text"]; a run of two concat stages
    warns once (DeprecationWarning naming the stage and ctx.settings), and the reads still give the values."""
    monkeypatch.setattr(params_module, "_warned", set())
    two_stage_recipe(project)
    with pytest.warns(DeprecationWarning, match=r"stage 'concat' reads ctx\.params by key") as told:
        assert cli("run", "recipe.yaml")[0] == 0
    messages = [str(w.message) for w in told if "ctx.params" in str(w.message)]
    assert len(messages) == 1 and "ctx.settings(" in messages[0]
    assert (project / "out/twostep/second/joined.txt").read_text() == "seed+1+2"


def test_built_ins_not_yet_converted_are_spared_and_the_list_only_shrinks():
    """KEYED_BUILTINS names built-in stage types only, none that declares settings: a stage converted to
    ctx.settings leaves the list, and from then on a read by key from it warns like a plugin's."""
    stages = installed_stages()
    assert KEYED_BUILTINS <= set(stages.names())
    assert not KEYED_BUILTINS & set(declaring_settings())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for keyed in KEYED_BUILTINS:  # any still spared (the list shrinks as stages are converted)
            assert stage_params(keyed, {"top": 1})["top"] == 1
    converted = stage_params("convert_float16", {"samples": 8})
    assert isinstance(converted, KeyedParams) and dict(converted) == {"samples": 8}
