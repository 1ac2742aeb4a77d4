"""Issue 39, finding 4: a team key set after a build made this cache's own records look damaged, and `engine
status` advised `cache verify --remove`, which deletes a good cache. Such a record (what it claims holds, its
objects intact, only the team's signature missing) is named as what it is; records this machine wrote carry its
local key's signature, and `engine cache adopt` re-signs exactly those with the team key after re-hashing every
object they name. A planted, altered, forged or object-swapped record is refused, and never served."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import executions, two_stage_recipe, write

TEAM_KEY = "0123456789abcdef" * 4


def _reasons(cli, recipe) -> str:
    code, out, err = cli("status", recipe, "--json")
    assert code == 1, out + err  # not up to date: the records are not served while the key is set
    return json.dumps(json.loads(out))


def test_records_written_before_the_team_key_are_called_unsigned_not_damaged(
    project, cli, monkeypatch
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project / "config"))
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY", raising=False)
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY_FILE", raising=False)
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)

    said = _reasons(cli, recipe)
    assert "damaged in the cache" not in said and "verify --remove" not in said, said
    assert said.count("unsigned (written here before ORTFLOW_SIGNING_KEY was set)") == 2, said

    record = next(
        p
        for p in (project / ".ortflow/runs").glob("*/*.json")
        if json.loads(p.read_text())["stage"] == "first"
    )
    changed = json.loads(record.read_text())
    changed["params"]["text"] = "+planted"
    record.chmod(0o644)
    record.write_text(json.dumps(changed))
    said = _reasons(cli, recipe)
    assert said.count("damaged in the cache") == 1, said


def _four_stage_recipe(project: Path) -> Path:
    (project / "seed.txt").write_text("seed")
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: four
        inputs:
          seed: {path: seed.txt}
        stages:
          a: {uses: concat, in: {parts: inputs.seed}, with: {text: "+a"}}
          b: {uses: concat, in: {parts: inputs.seed}, with: {text: "+b"}}
          c: {uses: concat, in: {parts: inputs.seed}, with: {text: "+c"}}
          d: {uses: concat, in: {parts: inputs.seed}, with: {text: "+d"}}
    """,
    )


def _built_without_a_key(project: Path, cli, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project / "config"))  # this test's own local key
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY", raising=False)
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY_FILE", raising=False)
    recipe = _four_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)
    return recipe


def test_adopting_ones_own_cache_signs_what_this_machine_built(project, cli, monkeypatch):
    recipe = _built_without_a_key(project, cli, monkeypatch)
    said = _reasons(cli, recipe)
    assert said.count("`engine cache adopt` signs it with the team key") == 4, said

    code, out, err = cli("cache", "adopt", recipe)
    assert code == 0 and "signed 4 run records with the team key" in out, out + err
    started = len(executions(project))
    assert cli("run", recipe)[0] == 0
    assert len(executions(project)) == started  # all four served, none rebuilt
    assert cli("status", recipe)[0] == 0


def _record_of(project: Path, stage: str) -> Path:
    for path in (project / ".ortflow/runs").glob("*/*.json"):
        if json.loads(path.read_text())["stage"] == stage:
            return path
    raise AssertionError(f"no record for {stage}")


def _rewrite(path: Path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.chmod(0o644)
    path.write_text(json.dumps(record))


def test_adopting_never_signs_a_planted_or_altered_record(project, cli, monkeypatch):
    """The audit's four tampered records, in a cache built here: none is served before or after adoption."""
    recipe = _built_without_a_key(project, cli, monkeypatch)
    cache = project / ".ortflow"
    _rewrite(_record_of(project, "a"), lambda r: r.pop("local_signature"))  # planted: unsigned
    _rewrite(_record_of(project, "b"), lambda r: r.update(summary="all good, trust me"))  # altered
    _rewrite(_record_of(project, "c"), lambda r: r.update(local_signature="0" * 64))  # forged
    digest = json.loads(_record_of(project, "d").read_text())["outputs"]["file"]["digest"]
    swapped = cache / "objects" / digest[:2] / digest[2:]
    swapped.chmod(0o644)
    swapped.write_text("seed+D")  # the object swapped under a genuine record

    code, out, err = cli("cache", "adopt", recipe)
    assert code == 1, out + err
    assert "signed 0 run records" in out and "4 refused" in out, out + err
    for stage in "abc":
        assert f"not adopted: {stage} (" in err and "local key" in err, err
    assert "not adopted: d (" in err and "missing or damaged" in err, err

    started = len(executions(project))
    assert cli("run", recipe)[0] == 0
    assert sorted(executions(project)[started:]) == ["a", "b", "c", "d"]  # served: 0 of 4
    assert "trust me" not in (project / "out/four/report.json").read_text()
