"""Hostile models and inputs: a model never makes ortflow read or write outside its folders, and inputs
that are not regular files are refused before anything hashes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import toy_model, write

from ortflow.engine.leaves.errors import StageError
from ortflow.engine.ort.onnx_model import private_model

SECRET = b"the contents of a private file nobody may copy"


def _model_naming(folder: Path, location: str) -> Path:
    """A MatMul whose weight is stored as external data, then re-pointed at `location`."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    path = toy_model(
        folder / "model.onnx",
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [weight],
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="w.bin",
        size_threshold=0,
    )
    model = onnx.load(str(path), load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    onnx.save_model(model, str(path))
    return path


def _secret(project: Path) -> Path:
    secret = project / "private" / "file"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return secret


def _copies_of_secret(root: Path, secret: Path) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and p != secret
        and p.stat().st_size == len(SECRET)
        and p.read_bytes() == SECRET
    ]


@pytest.mark.parametrize("kind", ["climbing", "absolute", "symlink", "itself"])
def test_model_naming_data_outside_its_folder_is_refused_before_anything_is_copied(
    project, cli, kind
):
    secret = _secret(project)
    folder = project / "models"
    folder.mkdir()
    location = {
        "climbing": "../private/file",
        "absolute": str(secret),
        "symlink": "link.bin",
        "itself": "model.onnx",
    }[kind]
    if kind == "symlink":
        (folder / "link.bin").symlink_to(secret)
    _model_naming(folder, location)
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: hostile
        inputs:
          model: {path: models/model.onnx}
        datasets:
          calibration: {loader: random, with: {samples: 2}}
        stages:
          calib: {uses: calibrate, in: {model: inputs.model, data: datasets.calibration}}
          dyn: {uses: quantize_dynamic, in: {model: inputs.model}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 2, (out, err)
    assert f"names external data at '{location}'" in err
    assert "inside its own folder" in err
    assert len(err.strip().splitlines()) == 1
    assert _copies_of_secret(project, secret) == []
    assert oct(secret.stat().st_mode & 0o777) == "0o600"


def test_a_stage_given_such_a_model_refuses_it_too(tmp_path):
    """Defence in depth: a model that reaches a stage some other way is refused before the copy."""
    secret = _secret(tmp_path)
    folder = tmp_path / "models"
    folder.mkdir()
    model = _model_naming(folder, "../private/file")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(StageError, match="names external data at '../private/file'"):
        private_model(model, work)
    assert _copies_of_secret(tmp_path, secret) == []


@pytest.mark.parametrize("kind", ["character device", "fifo", "root folder"])
def test_inputs_that_are_not_regular_files_are_refused_at_validate(project, cli, kind):
    if kind == "fifo":
        os.mkfifo(project / "pipe.onnx")
    target = {
        "character device": "/dev/zero",
        "fifo": str(project / "pipe.onnx"),
        "root folder": "/",
    }[kind]
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: special
        inputs:
          model: {{path: "{target}"}}
        stages:
          dyn: {{uses: quantize_dynamic, in: {{model: inputs.model}}}}
    """,
    )
    code, out, err = cli("validate", recipe)
    assert code == 2, (out, err)
    assert (
        "recipe.yaml:4:" if kind != "root folder" else "recipe.yaml:6:"
    ) in err  # the input, or where a model is wanted
    assert ("not a regular file" in err) if kind != "root folder" else ("a folder" in err)


def _big_seed_recipe(project: Path) -> Path:
    (project / "seed.txt").write_bytes(b"x" * 3_000_000)
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: big
        inputs:
          seed: {path: seed.txt}
        stages:
          copy: {uses: concat, in: {parts: inputs.seed}}
    """,
    )


def test_a_full_cache_disk_is_an_environment_error_and_nothing_partial_stays(
    project, cli, small_disk, monkeypatch
):
    monkeypatch.setenv("ORTFLOW_CACHE", str(small_disk / "cache"))
    code, out, err = cli("run", _big_seed_recipe(project))
    assert code == 5, (out, err)
    assert "no space left on the disk holding the cache" in out + err
    cache = small_disk / "cache"
    assert (
        list((cache / "runs").rglob("*.json")) == [] and list((cache / "objects").rglob("*")) == []
    )
    assert [p for p in (cache / "tmp").iterdir() if not p.name.endswith(".lock")] == []


def test_a_full_output_disk_is_an_environment_error_and_nothing_partial_stays(
    project, cli, small_disk
):
    code, out, err = cli("run", _big_seed_recipe(project), "--out", small_disk / "out")
    assert code == 5, (out, err)
    assert "no space left on the disk holding" in err and len(err.strip().splitlines()) == 1
    assert [p for p in small_disk.rglob("*") if p.is_file()] == []


def test_what_a_killed_copy_into_out_left_is_removed_by_the_next_run(project, cli):
    import subprocess
    import sys

    from ortflow.engine.store.atomic import staging_path

    recipe = _big_seed_recipe(project)
    assert cli("run", recipe)[0] == 0
    folder = project / "out/big/copy"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout
    ours = staging_path(folder / "joined.txt")
    leftover = ours.with_name(ours.name.replace(f".{os.getpid()}.", f".{dead.strip()}."))
    leftover.write_bytes(b"half a copy")
    ours.write_bytes(b"a live writer's file")
    assert cli("run", recipe)[0] == 0
    assert not leftover.exists() and ours.exists()


def test_a_file_that_is_not_a_model_is_named_with_the_fix(project, cli):
    (project / "notes.onnx").write_text("these are notes, not a model")
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: notes
        inputs:
          model: {path: notes.onnx}
        datasets:
          calibration: {loader: random, with: {samples: 2}}
        stages:
          calib: {uses: calibrate, in: {model: inputs.model, data: datasets.calibration}}
          dyn: {uses: quantize_dynamic, in: {model: inputs.model}}
    """,
    )
    code, out, err = cli("run", recipe, "-k")
    assert code == 1, (out, err)
    for stage in ("calib", "dyn"):
        line = next(x for x in err.splitlines() if f"stage '{stage}'" in x)
        assert (
            "notes.onnx is not an ONNX model" in line
            and "check that the path names an .onnx file" in line
        )
