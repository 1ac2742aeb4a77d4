"""A model stored with external data (the .onnx file beside the file holding its weights, as every model over
2 GB is, and many smaller exports) is one input: its key covers the weights, and every stage reads it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
from conftest import minilm_model, write

RECIPES = Path(__file__).parent.parent / "recipes"


def test_a_model_with_external_data_goes_through_the_stages_and_its_weights_are_in_the_key(project, cli):
    (project / "model").mkdir()
    onnx.save_model(onnx.load(str(minilm_model())), str(project / "model" / "minilm.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="minilm.onnx.data", size_threshold=1024)
    assert (project / "model" / "minilm.onnx").stat().st_size < 200_000  # the weights really are outside
    shutil.copy(RECIPES / "data" / "calibration.npz", project / "calibration.npz")
    recipe = write(project / "recipe.yaml", f"""
        version: 1
        name: external
        inputs:
          model: model/minilm.onnx
          single: {minilm_model()}
        datasets:
          feeds: {{loader: npz, with: {{path: calibration.npz, limit: 16}}}}
        stages:
          fused: {{uses: transformer_fusion, in: {{model: inputs.model}}, with: {{model_type: bert, num_heads: 12, hidden_size: 384}}}}
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}}}}
          int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: calib.table, data: datasets.feeds}},
                  with: {{per_channel: true, op_types_to_quantize: [MatMul, Gather]}}}}
          dynamic: {{uses: quantize_dynamic, in: {{model: fused.model, data: datasets.feeds}}}}
          same: {{uses: validate_accuracy, in: {{reference: inputs.single, candidates: [inputs.model], data: datasets.feeds}},
                  with: {{max: {{max_abs: 0.0}}}}}}
          accuracy: {{uses: validate_accuracy, in: {{reference: inputs.model, candidates: [int8.model, dynamic.model], data: datasets.feeds}},
                      with: {{outputs: ["461"], min: {{cosine_mean: 0.9}}}}}}
          speed: {{uses: benchmark, in: {{models: [inputs.model, int8.model], data: datasets.feeds}}, with: {{runs: 10}}}}
    """)
    code, out, err = cli("run", recipe)
    assert code == 0, out + err  # the same outputs as the single-file model (max_abs 0), and every stage ran
    code, _, _ = cli("status", recipe)
    assert code == 0
    # Only the weights file changes: everything that reads the model is out of date.
    data = project / "model" / "minilm.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[-4:] = b"\x00\x00\x80\x3f"  # the last weight becomes 1.0
    data.write_bytes(bytes(raw))
    code, out, err = cli("plan", recipe, "--json")
    planned = {item["name"]: item["action"] for item in json.loads(out)}
    assert {s for s, action in planned.items() if action == "run"} == {"fused", "calib", "int8", "dynamic", "same", "accuracy", "speed"}
    data.rename(project / "model" / "elsewhere.data")  # a model whose weights file went missing
    code, out, err = cli("run", recipe)
    assert code == 2 and "its weights are stored in minilm.onnx.data, which is not in" in err, out + err


def test_every_stage_that_writes_a_model_writes_external_data_when_the_model_needs_it(project, cli, monkeypatch):
    """MiniLM treated as over the 2 GB limit: each stage that writes a model writes a folder holding model.onnx
    and its data file, and the stages after it read that folder as one model."""
    from ortflow.engine.ort import onnx_model

    monkeypatch.setattr(onnx_model, "TWO_GB", 1_000_000)  # MiniLM's 70 MB is "over the limit"
    shutil.copy(RECIPES / "data" / "calibration.npz", project / "calibration.npz")
    recipe = write(project / "recipe.yaml", f"""
        version: 1
        name: large
        inputs:
          model: {minilm_model()}
        datasets:
          feeds: {{loader: npz, with: {{path: calibration.npz, limit: 8}}}}
        stages:
          fused: {{uses: transformer_fusion, in: {{model: inputs.model}}, with: {{model_type: bert, num_heads: 12, hidden_size: 384}}}}
          opt: {{uses: graph_optimization, in: {{model: fused.model}}}}
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}}}}
          int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: calib.table, data: datasets.feeds}},
                  with: {{op_types_to_quantize: [MatMul]}}}}
          dynamic: {{uses: quantize_dynamic, in: {{model: opt.model, data: datasets.feeds}}}}
          int4: {{uses: quantize_weights, in: {{model: fused.model, data: datasets.feeds}}}}
          half: {{uses: convert_float16, in: {{model: inputs.model, data: datasets.feeds}}, with: {{keep_io_types: true}}}}
          accuracy: {{uses: validate_accuracy,
                      in: {{reference: inputs.model, candidates: [fused.model, opt.model, int8.model, dynamic.model, int4.model, half.model],
                           data: datasets.feeds}},
                      with: {{outputs: ["461"], min: {{cosine_mean: 0.9}}}}}}
    """)
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    for stage in ("fused", "opt", "int8", "dynamic", "int4", "half"):
        folder = project / "out/large" / stage / "model.onnx"
        assert folder.is_dir(), stage
        files = sorted(p.name for p in folder.iterdir())
        assert len(files) == 2 and files[0] == "model.onnx" and files[1].endswith(".data"), (stage, files)
        assert (folder / files[1]).stat().st_size > (folder / "model.onnx").stat().st_size, stage  # weights are outside
