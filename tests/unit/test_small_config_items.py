"""Issue 29 item 9's small config items: an invalid name says the pattern and an example fix; every
transformers loader call in the built-in stages and loaders passes trust_remote_code=False itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ortflow.engine.leaves.errors import RecipeError


def test_an_invalid_stage_name_says_the_pattern_and_a_fix(project):
    from ortflow.engine.pipeline import load

    (project / "seed.txt").write_text("seed")
    recipe = project / "recipe.yaml"
    recipe.write_text(
        "version: 1\nname: x\ninputs:\n  seed: {path: seed.txt}\n"
        "stages:\n  '../../evil': {uses: concat, in: {parts: inputs.seed}}\n"
    )
    with pytest.raises(RecipeError) as caught:
        load(recipe, [], None)
    said = str(caught.value).splitlines()[0]
    assert "'../../evil' is not valid: it must match ^[A-Za-z_][A-Za-z0-9_-]*$" in said
    assert "e.g. 'evil'" in said


def test_transformers_loaders_refuse_remote_code_explicitly():
    import ortflow.loaders
    import ortflow.stages

    # the built-in stages and loaders where they are installed (the wheel check has no repository folders)
    folders = [Path(package.__file__).parent for package in (ortflow.stages, ortflow.loaders)]
    calls = []
    for path in [file for folder in folders for file in folder.rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "from_pretrained":
                passed = {k.arg: k.value for k in node.keywords}
                value = passed.get("trust_remote_code")
                calls.append(
                    (
                        f"{path.name}:{node.lineno}",
                        isinstance(value, ast.Constant) and value.value is False,
                    )
                )
    assert calls and all(ok for _, ok in calls), calls
