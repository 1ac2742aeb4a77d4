"""init's `spec` candidate (issue 41, engine/starter/shape_source.py): a small model that computes on its input
shapes gets a copy with that arithmetic folded (onnxscript's optimizer, the specialize stage), offered as a
candidate and used as the source of every INT8 one; `--batch 1` also fixes the batch dim at 1. Real models from
silero-vad's wheel with the repository's real speech chunks (recipes/data/audio), where the fold removes most of
the graph; toy graphs for the decision's edges (size, no shape arithmetic, a batch axis without a name)."""

from __future__ import annotations

import re
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import yaml
from conftest import toy_model
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.model_facts import TensorFact, read_model_facts
from ortflow.engine.starter.drafts import Target
from ortflow.engine.starter.proposal import propose_stages
from ortflow.engine.starter.roles import read_roles
from ortflow.engine.starter.shape_source import batch_dims

CHUNKS = Path(__file__).parent.parent / "recipes" / "data" / "audio" / "vad-calibration.npz"


def _silero(name: str) -> Path:
    found = distribution("silero-vad")
    return Path(str(found.locate_file(f"silero_vad/data/{name}"))).resolve()


def _without_sr(folder: Path) -> Path:
    """The real chunks and states, without the sample rate the "half" file does not take."""
    with np.load(CHUNKS) as chunks:
        path = folder / "chunks.npz"
        np.savez(path, input=chunks["input"][:24], state=chunks["state"][:24])
    return path


def _said(out: str) -> str:
    return " ".join(out.split())


def test_a_small_model_gets_its_shape_arithmetic_folded_as_a_candidate_and_int8_source(
    project, cli
):
    """silero-vad's "half" file (325 nodes, 12 Ifs on its input shapes): init proposes `spec` beside the
    original and builds INT8 from it; the stage folds the graph to under a fifth, checked equal on the data, and
    calibration on the folded copy goes on without ORT's pre-processing, whose shape inference cannot type
    past the If left on a time dim (before: `Incomplete symbolic shape inference` failed the run)."""
    data = _without_sr(project)
    code, out, err = cli(
        "init", _silero("silero_vad_half.onnx"), "--data", data, "-o", project / "half.yaml"
    )
    assert code == 0, (out, err)
    recipe = yaml.safe_load((project / "half.yaml").read_text())
    stages = recipe["stages"]
    assert stages["spec"]["uses"] == "specialize" and "with" not in stages["spec"], stages["spec"]
    assert stages["pick"]["in"]["models"][:2] == ["inputs.model", "spec.model"]
    assert stages["folded"]["in"]["model"] == "spec.model"  # INT8's source: the folded copy
    assert stages["accuracy"]["in"]["reference"] == "inputs.model"
    code, out, err = cli("run", project / "half.yaml", "calib")
    assert code == 0, (out, err)
    said = _said(out)
    nodes = re.search(r"nodes (\d+) -> (\d+) \(If (\d+) -> (\d+)", said)
    assert nodes is not None, said
    before, after, ifs_before, ifs_after = map(int, nodes.groups())
    assert after * 5 < before and ifs_after < ifs_before, said
    assert "pre-processing skipped (pre_process: auto)" in said, said


def test_batch_one_fixes_the_batch_dim_and_needs_real_data(project, cli):
    """`--batch 1` (silero's wheel calls its model one chunk at a time): the spec stage fixes `batch` at 1, and
    the copy takes [1, ...] only; without --data init refuses in one line (nothing to check the copy on)."""
    model = _silero("silero_vad_16k_op15.onnx")
    code, out, err = cli("init", model, "--batch", "1", "-o", project / "nodata.yaml")
    assert code == 2 and not (project / "nodata.yaml").exists(), (out, err)
    assert "--batch 1 needs real samples: give them with --data" in _said(err), err
    code, out, err = cli(
        "init", model, "--batch", "1", "--data", CHUNKS, "-o", project / "op15.yaml"
    )
    assert code == 0, (out, err)
    spec = yaml.safe_load((project / "op15.yaml").read_text())["stages"]["spec"]
    assert spec["with"] == {"dims": {"batch": 1}}, spec
    code, out, err = cli("run", project / "op15.yaml", "spec")
    assert code == 0, (out, err)
    folded = next((project / "out").rglob("spec/model.onnx"))
    inputs = {t.name: t.shape for t in read_model_facts(folded).inputs}
    assert inputs["input"][0] == 1 and inputs["state"][1] == 1, inputs


def _shape_reader(path: Path, weights: int, batch: str | int = "n") -> Path:
    """[batch, 8] -> a MatMul of about `weights` weight elements, then reshaped by a shape the graph computes
    (Shape -> Reshape): shape arithmetic on the input's batch dim."""
    side = max(1, weights // 8)
    return toy_model(
        path,
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Shape", ["h"], ["s"]),
            helper.make_node("Reshape", ["h", "s"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((8, side), np.float32), "W")],
    )


def _candidates(path: Path, batch: int | None = None, real_data: bool = True) -> list[str]:
    roles = read_roles(read_model_facts(path))
    return propose_stages(roles, Target.CPU, real_data, None, batch=batch).candidates


def test_the_fold_is_proposed_for_small_models_with_shape_arithmetic_only(tmp_path):
    """Below 1,000,000 weights and computing on its shapes: spec. A larger model: not without --batch 1 (its
    time is its arithmetic), with it yes. Random feeds: never (nothing to check the copy on, nor sizes for free
    dims). A batch axis with no name cannot be fixed by name: --batch 1 proposes nothing there."""
    small = _shape_reader(tmp_path / "small.onnx", 8 * 64)
    large = _shape_reader(tmp_path / "large.onnx", 8 * 200_000)
    assert "spec.model" in _candidates(small)
    assert "spec.model" not in _candidates(small, real_data=False)
    assert "spec.model" not in _candidates(large)
    assert "spec.model" in _candidates(large, batch=1)
    unnamed = _shape_reader(tmp_path / "unnamed.onnx", 8 * 200_000, batch=-1)
    assert "spec.model" not in _candidates(unnamed, batch=1)


def test_batch_dims_read_each_inputs_first_free_axis_by_name():
    state = TensorFact("state", "float32", (2, "batch", 128))
    chunk = TensorFact("input", "float32", ("batch", "sequence"))
    assert batch_dims((chunk, state)) == {"batch": 1}
    assert batch_dims((TensorFact("x", "float32", (1, 3)),)) is None  # nothing free to fix
    assert (
        batch_dims((chunk, TensorFact("y", "float32", (None, 4)))) is None
    )  # a free axis without a name


def test_optimize_says_which_shapes_a_specialized_delivery_takes(tmp_path):
    """--batch 1 delivers a model of batch 1; a network inside an If is specialized on the data's shapes, so its
    delivery takes those only: optimize's closing lines say which (before, the If route said nothing)."""
    from ortflow.engine.starter.drafts import StageDraft
    from ortflow.engine.starter.shape_source import batch_note

    delivered = tmp_path / "vad-optimized.onnx"
    batch = StageDraft("spec", "specialize", {}, {"dims": {"batch": 1}}, [])
    branched = StageDraft(
        "spec", "specialize", {}, {"freeze_from_data": ["sr"], "shapes_from_data": True}, []
    )
    assert "takes batch 1 only" in (batch_note([batch], delivered, False) or "")
    said = batch_note([branched], delivered, False) or ""
    assert (
        said.startswith(f"{delivered} takes the data's input shapes only")
        and "shapes_from_data: false" in said
    )
    assert (
        batch_note([branched], delivered, True) is None
    )  # the original delivered: it takes what it took
    assert batch_note([StageDraft("spec", "specialize", {}, {}, [])], delivered, False) is None
