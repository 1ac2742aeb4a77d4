"""engine.pipeline.Workspace: opened in one straight line (the store once, a bad recipe parsed once), never
changed afterwards, and each job's key computed once. Toy stages from tests/plugins; milliseconds each."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from conftest import write

from ortflow.engine import pipeline
from ortflow.engine.contracts import builds
from ortflow.engine.leaves.errors import RecipeError
from ortflow.engine.pipeline import Workspace
from ortflow.engine.store import artifacts
from ortflow.engine.store.shared import SharedStore

RECIPE = """
    version: 1
    name: toy
    inputs:
      data: {path: data.txt}
    stages:
      first: {uses: concat, in: {parts: inputs.data}, with: {text: "+1"}}
      second: {uses: concat, in: {parts: [first.file]}, with: {text: "+2"}}
      third: {uses: concat, in: {parts: [first.file, second.file]}}
"""


@pytest.fixture
def counted(monkeypatch) -> Counter:
    """How often a store is opened and an Identity (a key) is made."""
    counts: Counter = Counter()
    store_init, identity_init = artifacts.ArtifactStore.__init__, builds.Identity.__post_init__

    def opening(self, *args, **kwargs):
        counts["store"] += 1
        store_init(self, *args, **kwargs)

    def keying(self):
        counts["key"] += 1
        identity_init(self)

    monkeypatch.setattr(artifacts.ArtifactStore, "__init__", opening)
    monkeypatch.setattr(builds.Identity, "__post_init__", keying)
    return counts


def toy(project: Path) -> Path:
    (project / "data.txt").write_text("data")
    return write(project / "toy.yaml", RECIPE)


def test_the_store_is_opened_once_however_the_recipe_is_found(project, counted):
    recipe = toy(project)
    Workspace.open(recipe)  # no cache yet: validated, then the store made
    assert counted["store"] == 1
    Workspace.open(recipe)  # from the validated snapshot
    assert counted["store"] == 2
    recipe.write_text(recipe.read_text() + "# edited\n")
    Workspace.open(recipe)  # the snapshot no longer fits: validated again
    assert counted["store"] == 3


def test_a_remote_is_part_of_opening_and_the_workspace_never_changes(project, counted):
    from ortflow.engine.store.remote import Remote

    (project / "remote").mkdir()
    ws = Workspace.open(toy(project), remote=Remote(f"file://{project / 'remote'}"))
    assert isinstance(ws.store, SharedStore) and ws.remote is not None and counted["store"] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        ws.store = ws.store


def test_a_bad_recipe_is_parsed_once_reported_whole_and_creates_no_cache(project, monkeypatch):
    from ortflow.engine.recipe import load

    reads = []
    real = load.read_recipe
    monkeypatch.setattr(load, "read_recipe", lambda *args: reads.append(args) or real(*args))
    recipe = write(
        project / "bad.yaml",
        """
        version: 1
        name: bad
        stages:
          a: {uses: concat, in: {parts: [b.file]}}
          b: {uses: concat, in: {parts: [a.file]}}
          c: {uses: no_such_stage}
    """,
    )
    with pytest.raises(RecipeError) as caught:
        Workspace.open(recipe)
    assert len(reads) == 1
    text = str(caught.value)
    assert "cycle between stages: a -> b -> a" in text and "no_such_stage" in text
    assert not (project / ".ortflow").exists()


def test_each_job_key_is_computed_once_per_run(project, counted):
    ws = Workspace.open(toy(project))
    counted.clear()
    summary = pipeline.run(ws)
    assert [o.status.value for o in summary.outcomes.values()] == ["ran"] * 3
    assert counted["key"] == 3  # one Identity per job; nothing to check yet in the cache
    counted.clear()
    summary = pipeline.run(Workspace.open(ws.recipe.path))
    assert [o.status.value for o in summary.outcomes.values()] == ["cached"] * 3
    assert (
        counted["key"] == 6
    )  # one per job, and one per cached record to check it holds what its key claims
    assert all(o.record.key == o.key for o in summary.outcomes.values())
