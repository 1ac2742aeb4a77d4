"""The searches' and the built-in metrics' typed settings (stages/search/settings.py, stages/metrics/*) stand for
their params_schema: the same properties, JSON types and defaults, and reading validated parameters gives the
values the recipe wrote."""

from __future__ import annotations

import dataclasses

import pytest

from ortflow.api import fill_defaults, metric_type, settings_of, settings_problems
from ortflow.engine.contracts.registry import installed_stages
from ortflow.stages.metrics.dense_map import DenseMapSettings
from ortflow.stages.metrics.detection import DetectionSettings
from ortflow.stages.metrics.exact import ExactSettings
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


@pytest.mark.parametrize(
    ("metric", "settings"),
    [("exact", ExactSettings), ("dense_map", DenseMapSettings), ("detection", DetectionSettings)],
)
def test_metric_settings_agree_with_the_metrics_params_schema(metric, settings):
    assert settings_problems(settings, metric_type(metric).params_schema) == []


def test_quantize_search_is_a_settings_stage_whose_hooks_read_its_settings():
    """quantize_search declares SearchSettings: the engine's hooks parse the parameters once and the typed hooks
    answer from them; it reads nothing by key, so it is no longer spared the deprecation (nor is
    quantize_partial, whose search reads ctx.settings)."""
    from ortflow.api import SettingsStage
    from ortflow.engine.contracts.params import KEYED_BUILTINS
    from ortflow.stages.quantize_search import QuantizeSearch

    assert issubclass(QuantizeSearch, SettingsStage) and QuantizeSearch.settings is SearchSettings
    assert not {"quantize_search", "quantize_partial"} & KEYED_BUILTINS
    schema = QuantizeSearch.params_schema
    given = {
        "accuracy": {"min": {"cosine_mean": 0.99}},
        "benchmark": {"providers": ["CUDAExecutionProvider"]},
    }
    stage = QuantizeSearch()
    read = stage.parsed(fill_defaults(given, schema))
    assert "cuda_provider" in stage.facts(read)
    assert stage.env_facts(fill_defaults(given, schema)) == stage.facts(read)
    assert "cuda_provider" not in stage.env_facts(
        fill_defaults({"accuracy": given["accuracy"]}, schema)
    )
    untargeted = stage.problems(stage.parsed(fill_defaults({"accuracy": {}}, schema)))
    assert untargeted == [
        "accuracy needs a target: min (e.g. {cosine_mean: 0.99}) or max (e.g. {max_abs: 0.01})"
    ]
    unknown = fill_defaults({"accuracy": {"min": {"cosine_mean": 0.99}, "bogus": 1}}, schema)
    assert any(p.startswith("accuracy: ") and "bogus" in p for p in stage.check(unknown))
