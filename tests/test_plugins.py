"""Third-party stages arrive through the `ortflow.stages` entry-point group and are documented from their schema."""

from __future__ import annotations

import pytest

from ortflow.engine.errors import OrtflowError
from ortflow.engine.registry import Registry


def test_entry_point_discovery_lists_builtin_and_plugin_stages(cli):
    code, out, _ = cli("stages")
    assert code == 0
    assert "graph_optimization" in out and "stages.graph_optimization:GraphOptimization (ortflow)" in out
    assert "concat" in out and "ortflow_testplugin:Concat (ortflow-testplugin)" in out


def test_describe_a_stage_shows_its_parameters_from_the_schema(cli):
    code, out, _ = cli("stages", "graph_optimization")
    assert code == 0
    for text in ("level", "'extended'", "disabled, basic, extended, layout, all", "free_dimension_overrides", "onnx_model"):
        assert text in out
    code, out, _ = cli("stages", "concat")
    assert code == 0 and "seconds to wait first" in out and "parts (list)" in out


def test_unknown_stage_type_in_describe(cli):
    code, _, err = cli("stages", "graph_optimisation")
    assert code == 2 and "unknown stage type, dataset loader or metric 'graph_optimisation' — did you mean 'graph_optimization'?" in err


def test_registry_rejects_entry_point_whose_name_differs_from_the_type():
    from importlib.metadata import EntryPoint

    registry = Registry("ortflow.stages", {"wrong": EntryPoint("wrong", "ortflow_testplugin:Concat", "ortflow.stages")})
    with pytest.raises(OrtflowError, match="declares type 'concat'"):
        registry.get("wrong")
    broken = Registry("ortflow.stages", {"gone": EntryPoint("gone", "no_such_module_xyz:Stage", "ortflow.stages")})
    with pytest.raises(OrtflowError, match="cannot be imported from no_such_module_xyz:Stage"):
        broken.get("gone")
