"""Issue 29 item 1 end to end: a secret in a URL, holding '/', '@', ':', '#' or '%', never reaches stdout or
stderr (normal and --debug), report.json/.md/.html, the lock file or anything in the cache and out/ folders.
The URL comes in two ways: as the remote (refused before anything is opened, exit 2) and inside a stage's
error (the test plugin's explode stage says its `message`), which every output path then carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

SECRETS = ["Sl/ash+Key/x", "at@sign@x", "co:lon:x", "hash#frag#x", "pct%2Fenc%40x"]


def leaks(secret: str, *roots: Path) -> list[str]:
    """Every file under `roots` that holds the secret, the recipe (which the user wrote it into) aside."""
    return [
        str(path)
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and path.name != "recipe.yaml" and secret.encode() in path.read_bytes()
    ]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_url_secret_reaches_no_output(project, cli, secret):
    url = f"s3://AKIAKEYID:{secret}@bucket/prefix"
    (project / "seed.txt").write_text("seed")
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: leak
        inputs:
          seed: {{path: seed.txt}}
        stages:
          a: {{uses: concat, in: {{parts: inputs.seed}}}}
          b: {{uses: explode, in: {{file: a.file}}, with: {{message: "cannot reach {url}/x"}}}}
        """,
    )
    printed = []
    for debug in ([], ["--debug"]):
        code, out, err = cli("run", recipe, *debug)
        assert code == 1 and "cannot reach s3://***@bucket/prefix/x" in err, err
        printed.append(out + err)
        code, out, err = cli("run", recipe, "--remote", url, *debug)
        assert code == 2 and "remote s3://***@bucket/prefix: the URL holds credentials" in err, err
        printed.append(out + err)
    printed.append("".join(cli("status", recipe)[1:]) + "".join(cli("cache", "ls")[1:]))
    assert not [text for text in printed if secret in text]
    report = (project / "out" / "leak" / "report.json").read_text()
    assert "s3://***@bucket/prefix/x" in report
    assert not leaks(secret, project)  # cache, out/ (report.json/.md/.html), the lock file
