"""The CLI opens what a command works on in one place (engine.cli.command_base), once per command: the workspace,
the recipe alone, a cache command's store. The commands stay thin, over library verbs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ortflow.engine.cli.command_base import CommandBase
from ortflow.engine.leaves.errors import OrtflowError

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "recipes" / "quickstart.yaml"
# the library's openers: a workspace, a recipe, a store and where it is
OPENERS = re.compile(r"\bWorkspace\.open\(|(?<![\w.])load\(|\bopen_store\(|\bcache_root\(")


def test_only_the_command_base_calls_the_openers():
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted((ROOT / "engine" / "cli").glob("*.py"))
        if path.name != "command_base.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OPENERS.search(line)
    ]
    assert found == []


def test_a_workspace_asked_for_twice_is_opened_once(tmp_path):
    args = argparse.Namespace(
        recipe=QUICKSTART, overrides=[], params=None, cache=tmp_path / "cache", out=tmp_path / "out"
    )
    base = CommandBase(args)
    ws = base.workspace()
    assert base.workspace() is ws
    assert ws.recipe.name == "quickstart" and ws.store.root == tmp_path / "cache"
    assert ws.out_dir == tmp_path / "out"
    recipe, graph = base.recipe()
    assert base.recipe()[0] is recipe and set(recipe.stages) == set(ws.recipe.stages)


def test_a_cache_command_names_a_missing_store_and_makes_one_only_when_asked(tmp_path):
    args = argparse.Namespace(recipes=[], cache=tmp_path / "cache")
    with pytest.raises(OrtflowError, match="no artifact store at .* pass --cache DIR"):
        CommandBase(args).store()
    assert not (tmp_path / "cache").exists()
    store = CommandBase(args).store(create=True)
    assert (store.root / "objects").is_dir()
    assert CommandBase(args).store().root == store.root
