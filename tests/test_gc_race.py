"""`cache gc` racing a run that is finishing: library calls interleaved in the order `cache gc` makes them
(read the lock files, take the store mutex, remove), at the two moments that lost fresh records before: gc
reading the lock files just before the run writes its last entries, and gc running while the run writes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import two_stage_recipe

from ortflow.engine.contracts.types import lock_path_for
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.publish.lock import Lock, collect_garbage
from ortflow.engine.store.artifacts import ArtifactStore


def _built(project: Path, cli) -> tuple[Path, Lock, ArtifactStore]:
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    lock = Lock.read(lock_path_for(recipe))
    assert set(lock.stages) == {"first", "second"}
    return recipe, lock, ArtifactStore(project / ".ortflow")


def _records_kept(store: ArtifactStore, lock: Lock) -> list[str]:
    return sorted(name for name, e in lock.stages.items() if store.read_run(e.key) is not None)


def test_gc_reading_the_lock_just_before_a_run_writes_it_removes_nothing_the_run_built(
    project, cli, monkeypatch
):
    _, lock, store = _built(project, cli)
    fresh = lock.text()
    Lock(lock.path).write()  # as the lock file was while the run built: its entries not yet written
    running = store.in_use()
    running.acquire()  # the run, finishing
    real_read = Lock.read.__func__

    def the_run_finishes() -> None:  # the run writes its lock, then lets go of the store
        if running._handle is not None:
            lock.path.write_text(fresh, encoding="utf-8")
            running.release()

    def read_then_the_run_finishes(cls, path):
        found = real_read(cls, path)  # gc has read the lock files, and now the run finishes
        the_run_finishes()
        return found

    monkeypatch.setattr(Lock, "read", classmethod(read_then_the_run_finishes))
    try:
        collect_garbage(store, [lock.path])
    except StoreError as exc:  # refused: the run held the store mutex when gc asked for it
        assert "in use by a running `engine run`" in str(exc)
    the_run_finishes()
    assert _records_kept(store, lock) == ["first", "second"]
    collect_garbage(store, [lock.path])  # gc again, the run gone: the lock names both
    assert _records_kept(store, lock) == ["first", "second"]


def test_gc_while_a_run_writes_its_lock_file_removes_nothing_the_run_built(
    project, cli, monkeypatch
):
    recipe = two_stage_recipe(project)
    store = ArtifactStore(project / ".ortflow")
    Lock(
        lock_path_for(recipe)
    ).write()  # the lock of an earlier version of the recipe: nothing kept
    refused = []
    real_write = Lock.write

    def gc_then_write(self):  # `cache gc` started just as the run writes its lock file
        try:
            collect_garbage(store, [lock_path_for(recipe)])
        except StoreError:
            refused.append(True)
        real_write(self)

    monkeypatch.setattr(Lock, "write", gc_then_write)
    assert cli("run", recipe)[0] == 0
    monkeypatch.undo()
    assert refused and all(refused)  # every write happened while the run held the store mutex
    assert _records_kept(store, Lock.read(lock_path_for(recipe))) == ["first", "second"]


@pytest.mark.parametrize("dry_run", [True, False])
def test_gc_is_refused_while_a_run_holds_the_store(project, cli, dry_run):
    _, lock, store = _built(project, cli)
    with store.in_use().held():
        with pytest.raises(StoreError, match="in use by a running"):
            collect_garbage(store, [lock.path], dry_run=dry_run)
    assert _records_kept(store, lock) == ["first", "second"]
