"""Third-party stages arrive through the `ortflow.stages` entry-point group and are documented from their schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortflow.engine.contracts.registry import Registry
from ortflow.engine.leaves.errors import OrtflowError


def test_entry_point_discovery_lists_builtin_and_plugin_stages(cli):
    code, out, _ = cli("stages")
    assert code == 0
    assert (
        "graph_optimization" in out
        and "stages.graph_optimization:GraphOptimization (ortflow)" in out
    )
    assert "concat" in out and "ortflow_testplugin:Concat (ortflow-testplugin)" in out


def test_describe_a_stage_shows_its_parameters_from_the_schema(cli):
    code, out, _ = cli("stages", "graph_optimization")
    assert code == 0
    for text in (
        "level",
        "'extended'",
        "disabled, basic, extended, layout, all",
        "free_dimension_overrides",
        "onnx_model",
    ):
        assert text in out
    code, out, _ = cli("stages", "concat")
    assert code == 0 and "seconds to wait first" in out and "parts (list)" in out


def test_unknown_stage_type_in_describe(cli):
    code, _, err = cli("stages", "graph_optimisation")
    assert (
        code == 2
        and "unknown stage type, dataset loader or metric 'graph_optimisation' — did you mean 'graph_optimization'?"
        in err
    )


def test_registry_rejects_entry_point_whose_name_differs_from_the_type():
    from importlib.metadata import EntryPoint

    registry = Registry(
        "ortflow.stages",
        {"wrong": EntryPoint("wrong", "ortflow_testplugin:Concat", "ortflow.stages")},
    )
    with pytest.raises(OrtflowError, match="declares type 'concat'"):
        registry.get("wrong")
    undeclared = Registry(
        "ortflow.stages",
        {"undeclared": EntryPoint("undeclared", "ortflow_testplugin:Undeclared", "ortflow.stages")},
    )
    with pytest.raises(
        OrtflowError, match="declares a choice in best, which it has no output port for"
    ):
        undeclared.get("undeclared")
    broken = Registry(
        "ortflow.stages", {"gone": EntryPoint("gone", "no_such_module_xyz:Stage", "ortflow.stages")}
    )
    with pytest.raises(OrtflowError, match="cannot be imported from no_such_module_xyz:Stage"):
        broken.get("gone")


def test_a_plugin_importing_engine_internals_loads_and_is_told_once_what_to_import_instead(
    caplog, monkeypatch
):
    """Built-in stages now import only ortflow.api; a third-party plugin written against ortflow.engine.* keeps
    working for one release, and loading it warns once, naming the plugin, each import and its new home."""
    import logging
    from importlib.metadata import EntryPoint

    monkeypatch.setattr(
        logging.getLogger("ortflow"), "handlers", []
    )  # an earlier test's CLI console is closed

    registry = Registry(
        "ortflow.stages",
        {"legacy": EntryPoint("legacy", "ortflow_legacyplugin:Legacy", "ortflow.stages")},
    )
    with pytest.warns(DeprecationWarning) as caught:
        plugin = registry.get("legacy")
    assert plugin.type == "legacy"
    said = str(caught[0].message)
    assert "plugin 'legacy' (ortflow_legacyplugin:Legacy)" in said
    assert (
        "ortflow_legacyplugin.py:7: StageError from ortflow.engine.errors -> import it from ortflow.api"  # floorplan: keep
        in said
    )
    assert (
        ":8: ArtifactKind, Port, Stage, StageContext, StageResult from ortflow.engine.stage -> import it from ortflow.api"  # floorplan: keep
        in said
    )
    source = (
        (Path(__file__).parent / "plugins" / "ortflow_legacyplugin.py").read_text().splitlines()
    )
    line = next(i for i, text in enumerate(source, 1) if "import onnx_model" in text)
    assert f":{line}: onnx_model from ortflow.engine.ort -> import it from ortflow.api.onnx" in said
    assert said in caplog.text  # the CLI prints the "ortflow" logger's warnings
    again = Registry(
        "ortflow.stages",
        {"legacy": EntryPoint("legacy", "ortflow_legacyplugin:Legacy", "ortflow.stages")},
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: a second registry loads it quietly
        assert again.get("legacy") is plugin


def test_built_in_stages_and_loaders_import_only_ortflow_api():
    """What the import-linter contract checks, said for a reader of the tests: no built-in plugin would warn."""
    import ortflow.loaders
    import ortflow.stages
    from ortflow.engine.contracts.registry import engine_imports

    folders = [Path(package.__file__).parent for package in (ortflow.stages, ortflow.loaders)]
    found = {
        str(p): engine_imports(p.read_text(encoding="utf-8"))
        for folder in folders  # as installed: the repository's folders, or the wheel's
        for p in folder.rglob("*.py")
    }
    assert len(found) > 30 and not {p: f for p, f in found.items() if f}


def test_the_engine_modules_moved_by_the_floor_plan_import_under_their_old_names():
    """A plugin written against the engine's old module paths gets the same modules, one release; the deprecated
    loader shims under the engine are gone (CHANGELOG.md)."""
    import importlib

    import ortflow.engine.contracts.stage
    import ortflow.engine.leaves.errors

    old = importlib.import_module("ortflow.engine.stage")  # floorplan: keep
    assert old is ortflow.engine.contracts.stage
    from ortflow.engine import errors  # floorplan: keep

    assert errors is ortflow.engine.leaves.errors
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ortflow.engine.loaders.random")  # floorplan: keep
