"""Issue 39, finding 4 (in part): a team key set after a build made this cache's own records look damaged, and
`engine status` advised `cache verify --remove`, which deletes a good cache. Such a record (what it claims holds,
its objects intact, only the team's signature missing) is named as what it is; it is still not served (adopting
it under the team key is not built yet), and a record changed after it was written is still damage."""

from __future__ import annotations

import json

from conftest import two_stage_recipe

TEAM_KEY = "0123456789abcdef" * 4


def _reasons(cli, recipe) -> str:
    code, out, err = cli("status", recipe, "--json")
    assert code == 1, out + err  # not up to date: the records are not served while the key is set
    return json.dumps(json.loads(out))


def test_records_written_before_the_team_key_are_called_unsigned_not_damaged(
    project, cli, monkeypatch
):
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY", raising=False)
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY_FILE", raising=False)
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)

    said = _reasons(cli, recipe)
    assert "damaged in the cache" not in said and "verify --remove" not in said, said
    assert said.count("unsigned (written before ORTFLOW_SIGNING_KEY was set)") == 2, said

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
