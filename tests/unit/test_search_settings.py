"""The searches' typed settings (stages/search/settings.py) stand for their stages' params_schema: the same
properties, JSON types and defaults, and reading validated parameters gives the values the recipe wrote."""

from __future__ import annotations

import dataclasses

from ortflow.api import fill_defaults, settings_of, settings_problems
from ortflow.engine.contracts.registry import installed_stages
from ortflow.stages.search.settings import PartialSettings, SearchSettings


def test_quantize_search_settings_agree_with_its_params_schema():
    schema = installed_stages().get("quantize_search").params_schema
    assert settings_problems(SearchSettings, schema) == []


def test_quantize_partial_settings_have_its_properties_and_defaults():
    # settings_problems reads one JSON type per property; `seconds` is ["number", "null"] here
    schema = installed_stages().get("quantize_partial").params_schema
    properties = schema["properties"]
    assert [f.name for f in dataclasses.fields(PartialSettings)] == list(properties)
    assert dataclasses.asdict(PartialSettings()) == {n: p["default"] for n, p in properties.items()}


def test_search_settings_read_the_recipes_values_and_keep_nested_blocks_as_given():
    schema = installed_stages().get("quantize_search").params_schema
    given = {"accuracy": {"min": {"cosine_mean": 0.99}}, "families": ["weights"], "tie": 0.1}
    read = settings_of(SearchSettings, fill_defaults(given, schema))
    assert read.families == ("weights",) and read.tie == 0.1 and read.repair == 2
    assert read.space("weights") == {"bits": [8, 4]}
    assert read.accuracy == {"min": {"cosine_mean": 0.99}}
    assert read.benchmark == {"runs": 200, "rounds": 4, "peak_memory": False}
