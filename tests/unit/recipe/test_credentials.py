"""engine/recipe/credentials.py: a URL holding credentials anywhere in a recipe (a stage parameter, a dataset's
path) is refused where it stands, so it never reaches git, run records or reports."""

from __future__ import annotations

import pytest

from ortflow.engine.recipe.credentials import credential_problems

from .helpers import at, parsed

SECRETS = ["Sl/ash", "at@sign", "co:lon", "hash#frag", "pct%2Fenc"]

RECIPE = """
version: 1
name: r
inputs:
  model: {path: model.onnx}
datasets:
  calibration: {loader: npz, with: {path: "s3://AKIAKEYID:{secret}@bucket/calib.npz"}}
stages:
  opt: {uses: graph_optimization, in: {model: inputs.model}, with: {level: basic}}
  speed:
    uses: benchmark
    with: {notes: ["https://example.com/x?token={secret}", "fine: https://example.com/docs"]}
"""


@pytest.mark.parametrize("secret", SECRETS)
def test_a_url_with_credentials_anywhere_is_refused_where_it_stands(secret):
    text = RECIPE.replace("{secret}", secret)
    data, source = parsed(text)
    problems = credential_problems(data, source)
    assert [str(p.location) for p in problems] == [
        at(text, '"s3://'),
        at(text, '"https://example.com/x'),
    ]
    said = " ".join(str(p) for p in problems)
    assert secret not in said and "credentials" in said and "environment" in said


def test_urls_without_credentials_pass():
    data, source = parsed(RECIPE.replace("AKIAKEYID:{secret}@", "").replace("?token={secret}", ""))
    assert credential_problems(data, source) == []
