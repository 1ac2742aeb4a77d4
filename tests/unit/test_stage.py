"""StageContext's typed inputs: a stage asks for one file, several, or a dataset, and never handles `X | list[X]`;
a step's input on a port that takes many is a list even when the parent hands it one Artifact."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortflow.api import Artifact, ArtifactKind, Port, Stage, StageContext, StageError
from ortflow.engine.run.steps import _shaped


class _Loader:
    """Stands in for a Dataset: anything that is not a file or a list of them."""


def _context(tmp_path: Path) -> StageContext:
    data = _Loader()
    return StageContext(
        "s",
        {},
        {"model": tmp_path / "m.onnx", "models": [tmp_path / "a.onnx"], "data": data},  # type: ignore[dict-item]
        tmp_path,
        {},
        tmp_path,
        digests={"model": "d0", "models": ["d1"], "data": "d2"},
    )


def test_typed_accessors_say_what_a_port_holds(tmp_path: Path):
    ctx = _context(tmp_path)
    assert ctx.path("model") == tmp_path / "m.onnx"
    assert ctx.paths("models") == (
        tmp_path / "a.onnx",
    )  # a port that takes many: a tuple, even of one
    assert ctx.artifact("model") == Artifact("d0", tmp_path / "m.onnx")
    assert ctx.artifacts("models") == (Artifact("d1", tmp_path / "a.onnx"),)
    assert isinstance(ctx.dataset("data"), _Loader)
    assert ctx.has("data") and not ctx.has("metric")
    assert (
        ctx.paths("calibrations") == () and ctx.artifacts("calibrations") == ()
    )  # an optional one not given


def test_asking_for_the_wrong_shape_names_the_accessor_to_use(tmp_path: Path):
    ctx = _context(tmp_path)
    with pytest.raises(TypeError, match=r"takes many references — use ctx.paths\('models'\)"):
        ctx.path("models")
    with pytest.raises(TypeError, match=r"takes one reference — use ctx.artifact\('model'\)"):
        ctx.artifacts("model")
    with pytest.raises(TypeError, match=r"is a file, not a dataset — use ctx.path\('model'\)"):
        ctx.dataset("model")
    with pytest.raises(TypeError, match=r"is a dataset, not a file"):
        ctx.path("data")


def test_the_old_list_shape_of_artifact_still_works_for_a_release(tmp_path: Path):
    with pytest.warns(DeprecationWarning, match=r"use ctx.artifacts\('models'\)"):
        assert _context(tmp_path).artifact("models") == [Artifact("d1", tmp_path / "a.onnx")]


class _Compare(Stage):
    type = "compare_stub"
    inputs = (
        Port("models", ArtifactKind.ONNX_MODEL, "", many=True),
        Port("data", ArtifactKind.DATASET, ""),
    )


def test_a_step_input_on_a_many_port_is_a_list_even_of_one():
    one = Artifact("d", Path("m.onnx"))
    assert _shaped(_Compare, "models", one) == [one]
    assert _shaped(_Compare, "models", [one, one]) == [one, one]
    assert _shaped(_Compare, "data", one) is one
    with pytest.raises(StageError, match="input 'data' takes one Artifact, got a list of 2"):
        _shaped(_Compare, "data", [one, one])
    with pytest.raises(StageError, match="has no input 'model' "):
        _shaped(_Compare, "model", one)


def test_reading_the_deprecated_inputs_warns_and_the_accessors_do_not(tmp_path: Path):
    """docs/plugins.md calls ctx.inputs deprecated: reading it says so (DeprecationWarning, naming the
    accessors), and still returns each port's value for a plugin not yet moved."""
    import warnings

    ctx = _context(tmp_path)
    with pytest.warns(DeprecationWarning, match="ctx.path, ctx.paths, ctx.dataset"):
        assert ctx.inputs["model"] == tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ctx.path("model") == tmp_path / "m.onnx" and ctx.has("models")
