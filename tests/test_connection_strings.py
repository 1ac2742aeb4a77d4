"""Issue 38, finding 5: a connection string (`key=value;` pairs with a secret-named key, Azure's
`AccountKey=`) in ortflow.yaml or a recipe is refused where it stands, with its file:line, for every
fsspec backend, before any remote is opened; its secret is never printed."""

from __future__ import annotations

import pytest
from conftest import two_stage_recipe, write

from ortflow.engine.leaves.errors import EXIT_USAGE
from ortflow.engine.leaves.secrets import redact

SECRET = "Zm9vYmFy+c2VjcmV0/a2V5=="

BACKENDS = {
    "s3": (
        "s3://team-bucket/ortflow",
        "profile",
        f"aws_access_key_id=AKIAX;aws_secret_access_key={SECRET}",
    ),
    "gcs": ("gs://team-bucket/ortflow", "project", f"type=service_account;private_key={SECRET}"),
    "azure": (
        "az://container/ortflow",
        "connection_string",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={SECRET};EndpointSuffix=core.windows.net",
    ),
    "abfs": (
        "abfs://container/ortflow",
        "connection_string",
        f"BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sig={SECRET}",
    ),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_connection_string_in_the_project_file_is_refused_with_its_line(project, cli, backend):
    url, option, value = BACKENDS[backend]
    recipe = two_stage_recipe(project)
    config = write(
        project / "ortflow.yaml",
        f"""
        remote:
          url: {url}
          options:
            {option}: "{value}"
        """,
    )
    code, out, err = cli("cache", "pull", recipe)
    assert code == EXIT_USAGE and f"{config}:4:" in err, err
    assert f"remote.options.{option}: credentials do not belong in a project file" in err
    assert "connection string" in err and SECRET not in out + err


def test_a_connection_string_in_a_recipe_is_refused_and_redacted_anywhere(project, cli):
    value = BACKENDS["azure"][2]
    (project / "seed.txt").write_text("seed")
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: conn
        inputs:
          seed: {{path: seed.txt}}
        stages:
          a: {{uses: concat, in: {{parts: inputs.seed}}, with: {{text: "{value}"}}}}
        """,
    )
    code, out, err = cli("validate", recipe)
    assert code == EXIT_USAGE and "recipe.yaml:6:" in err and "'AccountKey'" in err, err
    assert SECRET not in out + err
    assert redact(f"failed: {value}.") == f"failed: {value.replace(SECRET, '***')}."
    assert redact("key=abc and a=b; c") == "key=abc and a=b; c"  # not a connection string
