"""The store's interface speaks the typed model: a RunRecord in, a RunRecord out (its JSON parsed in the store,
nowhere else), pinned float values as numbers, and recipe snapshots kept through the store's own methods."""

from __future__ import annotations

import json

from ortflow.engine.contracts.builds import Identity, RunOutput, RunRecord, parse_record
from ortflow.engine.store.artifacts import ArtifactStore

IDENTITY = Identity("concat", "1", {"text": "+x"}, {"parts": ["1" * 64]}, {"onnxruntime": "1.2"})


def stored_output(store: ArtifactStore, tmp_path) -> RunOutput:
    made = tmp_path / "joined.txt"
    made.write_text("a+x", encoding="utf-8")
    return RunOutput(store.add(made), "file", "joined.txt", 3, (1.5, -0.25))


def test_a_record_written_typed_reads_back_typed_with_its_values_as_numbers(tmp_path):
    store = ArtifactStore(tmp_path / "cache")
    out = stored_output(store, tmp_path)
    record = RunRecord(IDENTITY.key, "join", *IDENTITY.to_json().values(), {"file": out})
    store.write_run(record)
    served = store.read_run(IDENTITY.key, "join")
    assert isinstance(served, RunRecord) and served.outputs == {"file": out}
    assert served.identity.key == IDENTITY.key
    on_disk = json.loads(store.run_path(IDENTITY.key).read_text(encoding="utf-8"))
    assert on_disk["outputs"]["file"]["values"] == "AAAAAAAA+D8AAAAAAADQvw=="  # packed only in JSON
    reparsed = parse_record(on_disk)
    assert reparsed is not None and reparsed.outputs == served.outputs


def test_a_record_whose_object_was_removed_is_not_served(tmp_path):
    store = ArtifactStore(tmp_path / "cache")
    out = stored_output(store, tmp_path)
    store.write_run(RunRecord(IDENTITY.key, "join", *IDENTITY.to_json().values(), {"file": out}))
    assert store.read_run(IDENTITY.key) is not None
    store.object_path(out.digest).chmod(0o644)
    store.object_path(out.digest).unlink()
    assert store.read_run(IDENTITY.key) is None and store.has_run(IDENTITY.key)


def test_snapshots_are_kept_through_the_store_and_go_with_gc(tmp_path):
    store = ArtifactStore(tmp_path / "cache")
    assert store.read_snapshot("k" * 64) is None
    store.write_snapshot("k" * 64, "signature\n{}")
    assert store.read_snapshot("k" * 64) == "signature\n{}"
    store.gc(set(), set())
    assert store.read_snapshot("k" * 64) is None


def test_the_cache_listing_reads_records_through_the_one_parse(tmp_path):
    """`engine cache ls --json` (listings.cached_runs) read each record file by key itself, apart from
    parse_record: a record written before `created` existed, or a file that holds JSON but no object, crashed
    the listing (KeyError, AttributeError) instead of showing the record, or the file as unreadable."""
    from ortflow.engine.cli.listings import cached_runs

    store = ArtifactStore(tmp_path / "cache")
    out = stored_output(store, tmp_path)
    store.write_run(RunRecord(IDENTITY.key, "join", *IDENTITY.to_json().values(), {"file": out}))
    path = store.run_path(IDENTITY.key)
    older = json.loads(path.read_text(encoding="utf-8"))
    del older["created"]
    path.chmod(0o644)
    path.write_text(json.dumps(older), encoding="utf-8")
    listed = store.run_path("f" * 64)
    listed.parent.mkdir(parents=True, exist_ok=True)
    listed.write_text("[1, 2]", encoding="utf-8")
    rows = {row["key"]: row for row in cached_runs(store)}
    assert rows[IDENTITY.key] == {
        "key": IDENTITY.key,
        "stage": "join",
        "type": "concat",
        "created": "",
        "outputs": ["file"],
        "bytes": 3,
    }
    assert rows["f" * 64] == {"key": "f" * 64, "unreadable": True}
