"""Task metrics on real models nobody here tuned for: a detector judged by its detections, a classifier by its
labels, a streaming voice-activity model (scalar and state inputs) by its speech decisions. The repo's recipes
for them run as written; metric names are checked before anything runs; a user's metric file and an
installed metric gate, select and show in the reports like the built-in ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"


def _recipe(project: Path, name: str) -> Path:
    shutil.copy(RECIPES / name, project / name)
    shutil.copytree(RECIPES / "data", project / "data", dirs_exist_ok=True)
    return project / name


def _accuracy(project: Path, recipe: str) -> dict:
    return json.loads((project / "out" / recipe / "accuracy" / "accuracy.json").read_text())


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_the_detector_recipe_is_gated_on_detections_which_cosine_cannot_see(project, cli):
    recipe = _recipe(project, "detector-cpu-int8.yaml")
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    values = _accuracy(project, "detector-cpu-int8")["values"]["int8"]
    assert values["det_f1"] >= 0.8 and values["det_map50"] >= 0.65
    lock = (project / "detector-cpu-int8.yaml.lock").read_text()
    assert (
        "plugin:ortflow.metrics:detection: ortflow" in lock
    )  # the metric's code is in the verdict's key
    assert "det_f1" in out and "det_map50" in out  # the run's table shows them
    report = json.loads((project / "out/detector-cpu-int8/report.json").read_text())
    stage = next(s for s in report["stages"] if s["stage"] == "accuracy")
    assert stage["metrics"]["det_f1"]["int8"] == round(values["det_f1"], 6)
    assert "det_map50" in (project / "out/detector-cpu-int8/report.md").read_text()
    # Quantizing the INT8 model again (a slip that happens): ORT's "Expected ... to be an initializer" explained.
    again = project / "again.yaml"
    again.write_text(
        recipe.read_text().replace(
            "  accuracy:",
            "  again: {uses: quantize_dynamic, in: {model: int8.model}, "
            "with: {op_types_to_quantize: [Conv]}}\n  accuracy:",
            1,
        )
    )
    code, out, err = cli("run", again, "again")
    assert code == 1 and "to be an initializer — this model is already quantized" in err, out + err
    # Per-tensor weights keep the raw output's cosine but lose boxes: the detection gate says so.
    code, out, err = cli("run", recipe, "--set", "int8.with.per_channel=false")
    assert code == 3, out + err
    assert "det_map50" in err and "< min 0.65" in err
    broken = _accuracy(project, "detector-cpu-int8")["values"]["int8"]
    assert broken["cosine_mean"] > 0.99 and broken["det_map50"] < 0.65


def test_the_streaming_vad_recipe_feeds_a_scalar_and_a_state_batched_on_axis_1(project, cli):
    recipe = _recipe(project, "vad-cpu-int8.yaml")
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    document = _accuracy(project, "vad-cpu-int8")
    assert document["values"]["int8"]["label_agreement"] >= 0.97 and document["samples"] == 188
    timings = json.loads((project / "out/vad-cpu-int8/speed/benchmark.json").read_text())
    assert {r["batch_size"] for r in timings["results"]} == {
        1,
        8,
    }  # 8 chunks per run: state joined on axis 1
    # Random data for the same model: the state's unnamed batch axis sized by position, the rate a scalar.
    write(
        project / "random.yaml",
        """
        version: 1
        name: random
        inputs:
          model: {package: silero-vad, file: silero_vad/data/silero_vad_16k_op15.onnx}
        datasets:
          noise: {loader: random, with: {samples: 4, dims: {batch: 1, sequence: 576}, shapes: {state: [2, 1, 128], sr: []},
                                         ranges: {sr: [16000, 16001]}, batch_axes: {state: 1}}}
        stages:
          speed: {uses: benchmark, in: {models: [inputs.model], data: datasets.noise}, with: {batch_size: 2, runs: 5}}
    """,
    )
    code, out, err = cli("run", project / "random.yaml")
    assert code == 0, out + err


def test_ort_failures_on_silero_vad_say_what_they_mean(project, cli):
    """Silero VAD's graphs trip ORT's tools: shape inference asserts on its If outputs (an explicit pre_process:
    true fails on it; auto, the default, goes on without: test_pre_process), and the export whose whole graph
    sits in an If (one branch per sample rate) has nothing ORT's quantizers can reach."""
    shutil.copytree(RECIPES / "data", project / "data")
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: failures
        inputs:
          op15: {package: silero-vad, file: silero_vad/data/silero_vad_16k_op15.onnx}
          wrapped: {package: silero-vad, file: silero_vad/data/silero_vad.onnx}
        datasets:
          chunks: {loader: npz, with: {path: data/audio/vad-calibration.npz, batch_axes: {state: 1, sr: null}, limit: 8}}
        stages:
          calib: {uses: calibrate, in: {model: inputs.op15, data: datasets.chunks}, with: {pre_process: true}}
          nothing: {uses: quantize_dynamic, in: {model: inputs.wrapped, data: datasets.chunks}}
          speed: {uses: benchmark, in: {models: [inputs.wrapped], data: datasets.chunks}, with: {runs: 5}}
    """,
    )
    code, out, err = cli("run", project / "recipe.yaml", "-k")
    assert code == 1, out + err
    calib = next(line for line in err.splitlines() if "stage 'calib'" in line)
    assert (
        "quant_pre_process failed: AssertionError" in calib
        and "If/Loop nodes" in calib
        and "pre_process: false" in calib
    )
    nothing = next(line for line in err.splitlines() if "stage 'nothing'" in line)
    assert (
        "quantized nothing" in nothing
        and "are inside If/Loop subgraphs" in nothing
        and "LSTM" in nothing
    ), nothing
    assert "Removing initializer" not in out + err  # ORT's own log lines stay out of the console
    code, out, err = cli("--debug", "run", project / "recipe.yaml", "calib")
    assert (
        code == 1 and "symbolic_shape_infer.py" in err and "_infer_If" in err
    )  # ORT's traceback, with --debug


def test_the_classifier_recipe_counts_files_whose_label_changed_and_hashes_the_files_it_reads(
    project, cli
):
    recipe = _recipe(project, "classifier-cpu-int8.yaml")
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    values = _accuracy(project, "classifier-cpu-int8")["values"]["int8"]
    assert values["samples_unchanged"] >= 0.9 and "samples_unchanged" in out
    code, _, _ = cli("status", recipe)
    assert code == 0
    code, out, _ = cli("plan", recipe)
    assert "note:" not in out  # both python datasets declare what they read
    undeclared = (
        project / "undeclared.yaml"
    )  # the folder passed as a plain keyword: the key cannot see it
    undeclared.write_text(
        recipe.read_text().replace(
            "function: feeds, data: data/files/held-out",
            "function: feeds, kwargs: {data: data/files/held-out}",
        )
    )
    code, out, _ = cli("plan", undeclared)
    assert "note: dataset 'held_out' (python): only magika_bytes.py is in its cache key" in out, out
    # The python dataset's `data` folder is part of the key: one more held-out file re-runs what reads it.
    shutil.copy(
        project / "data/files/held-out/json-0.json", project / "data/files/held-out/json-9.json"
    )
    code, out, err = cli("status", recipe)
    assert code == 1 and "accuracy" in out + err


def test_integer_outputs_are_compared_exactly_and_cosine_on_them_is_refused(project, cli):
    """magika's model with an ArgMax appended, as a deployment graph returns the label itself."""
    import onnx
    from onnx import helper

    from ortflow.engine.ort.onnx_model import max_ir_version

    model = onnx.load(str(_package_file("magika", "magika/models/standard_v3_3/model.onnx")))
    scores = model.graph.output[0].name
    model.graph.node.append(helper.make_node("ArgMax", [scores], ["label"], axis=-1, keepdims=0))
    del model.graph.output[:]
    model.graph.output.append(
        helper.make_tensor_value_info("label", onnx.TensorProto.INT64, ["batch"])
    )
    model.ir_version = min(model.ir_version, max_ir_version())
    onnx.save(model, str(project / "labeller.onnx"))
    shutil.copytree(RECIPES / "data", project / "data")

    def recipe(gates: str) -> Path:
        return write(
            project / "recipe.yaml",
            f"""
            version: 1
            name: labels
            inputs: {{model: labeller.onnx}}
            datasets:
              files: {{loader: python, with: {{path: data/magika_bytes.py, function: feeds, data: data/files/held-out}}}}
            stages:
              int8: {{uses: quantize_dynamic, in: {{model: inputs.model}}, with: {{op_types_to_quantize: [MatMul, Gemm]}}}}
              accuracy:
                uses: validate_accuracy
                in: {{reference: inputs.model, candidates: [int8.model], data: datasets.files}}
                with: {gates}
        """,
        )

    code, out, err = cli("run", recipe("{min: {cosine_mean: 0.99}}"))
    assert code == 1 and "holds integers (labels or ids): cosine_mean means nothing" in err, (
        out + err
    )
    code, out, err = cli("run", recipe("{min: {samples_unchanged: 0.8}}"))
    assert code == 0, out + err
    per_output = _accuracy(project, "labels")["results"]["int8"]["label"]
    assert "cosine_mean" not in per_output and "top1_agreement" not in per_output
    assert (
        0.8 <= per_output["samples_unchanged"] == per_output["label_agreement"] <= 1
    )  # one label per sample


def test_metric_names_are_checked_before_anything_runs(project, cli):
    """On NudeNet's real detector, where `min: {det_f1: 0.9}` was refused and select's constraint on it failed
    only an hour into a run."""

    def check(
        validate: str, select: str = "{maximize: speedup}", search: str = "{cosine_mean: 0.9}"
    ) -> tuple[int, str]:
        write(
            project / "recipe.yaml",
            f"""
            version: 1
            name: names
            inputs: {{model: {{package: nudenet, file: nudenet/320n.onnx}}}}
            datasets: {{feeds: {{loader: random}}}}
            stages:
              acc:
                uses: validate_accuracy
                in: {{reference: inputs.model, candidates: [inputs.model], data: datasets.feeds}}
                with: {validate}
              speed: {{uses: benchmark, in: {{models: [inputs.model], data: datasets.feeds}}}}
              pick: {{uses: select, in: {{models: [inputs.model], accuracy: acc.results, benchmark: speed.results}}, with: {select}}}
              search:
                uses: quantize_search
                in: {{reference: inputs.model, models: [inputs.model], data: datasets.feeds}}
                with: {{accuracy: {{min: {search}}}}}
        """,
        )
        code, out, err = cli("validate", project / "recipe.yaml")
        return code, out + err

    code, said = check("{metrics: {detection: {output: output0}}, min: {det_f2: 0.9}}")
    assert (
        code == 2
        and "no metric 'det_f2' — did you mean 'det_f1'?" in said
        and "recipe.yaml:" in said
    )
    code, said = check("{min: {det_f1: 0.9}}")  # no detection metric configured: no such name here
    assert code == 2 and "no metric 'det_f1'" in said
    code, said = check(
        "{metrics: {detection: {output: output0}}, min: {det_f1: 0.9}}",
        "{maximize: speedup, min: {det_f1: 0.9}}",
    )
    assert code == 0, said
    code, said = check("{metrics: {detection: {output: output0}}}", "{maximize: det_map5}")
    assert code == 2 and "did you mean 'det_map50'?" in said
    code, said = check("{metrics: {detectoin: {output: output0}}}")
    assert code == 2 and "unknown metric 'detectoin'" in said
    code, said = check("{}", search="{label_agreemnt: 0.9}")
    assert (
        code == 2
        and "accuracy: min: no metric 'label_agreemnt' — did you mean 'label_agreement'?" in said
    )
    code, said = check(
        "{metrics: {worst_sample_error: {output: out}}, max: {worst_sample_error: 0.1}}",
        "{minimize: worst_sample_error}",
    )  # an installed metric, from its entry point
    assert code == 0, said
    code, said = check(
        "{metrics: {worst_sample_error: {output: out}}, min: {worst_sample_error: 0.1}}"
    )
    assert (
        code == 2
        and "worst_sample_error is better lower, so a bound on it belongs under `max:`" in said
    )
    code, out, _ = cli("stages")  # every installed metric with what it reports
    assert code == 0 and "det_map50 (higher)" in out and "worst_sample_error (lower)" in out
    code, out, _ = cli("stages", "detection")
    assert code == 0 and "reports det_f1 (better higher)" in out and "score_threshold" in out


def test_a_metric_file_and_an_installed_metric_gate_select_and_show_everywhere(project, cli):
    """magika's real classifier, dynamic INT8 with and without per-channel weights; the user's metric reads
    the labels, the installed one the probabilities."""
    shutil.copytree(RECIPES / "data", project / "data")
    write(
        project / "agreement.py",
        """
        import numpy as np

        METRICS = {"type_agreement": "higher"}

        def metric(reference, candidate, feeds):
            ref, cand = reference["target_label"], candidate["target_label"]
            return {"type_agreement": float(np.mean([r.argmax() == c.argmax() for r, c in zip(ref, cand)]))}
    """,
    )
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: files
        inputs:
          model: {package: magika, file: magika/models/standard_v3_3/model.onnx}
          agreement: agreement.py
        datasets:
          files: {loader: python, with: {path: data/magika_bytes.py, function: feeds, data: data/files/held-out}}
        stages:
          int8:
            uses: quantize_dynamic
            matrix: {per_channel: [false, true]}
            in: {model: inputs.model}
            with: {op_types_to_quantize: [MatMul, Gemm]}
          accuracy:
            uses: validate_accuracy
            in: {reference: inputs.model, candidates: ["int8.model[*]"], data: datasets.files, metric: inputs.agreement}
            with:
              metrics: {worst_sample_error: {output: target_label}}
              min: {type_agreement: 0.8}
              max: {worst_sample_error: 0.5}
          speed: {uses: benchmark, in: {models: [inputs.model, "int8.model[*]"], data: datasets.files}, with: {runs: 10}}
          pick:
            uses: select
            in: {models: [inputs.model, "int8.model[*]"], accuracy: accuracy.results, benchmark: speed.results}
            with: {maximize: type_agreement, min: {type_agreement: 0.8}, max: {worst_sample_error: 0.5}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    document = _accuracy(project, "files")
    assert (
        document["better"]["type_agreement"] == "higher"
        and document["better"]["worst_sample_error"] == "lower"
    )
    selection = json.loads((project / "out/files/pick/selection.json").read_text())
    rows = {c["id"]: c for c in selection["candidates"]}
    # The float model competes as itself (the accuracy stage's reference), without being listed as a candidate there.
    assert (
        rows["model"]["values"]["type_agreement"] == 1.0
        and rows["model"]["values"]["worst_sample_error"] == 0.0
    )
    chosen = next(c for c in selection["candidates"] if c["chosen"])
    assert chosen["values"]["type_agreement"] == 1.0 and len(rows) == 3
    assert "type_agreement" in out and "worst_sample_error" in out
    report_md = (project / "out/files/report.md").read_text()
    assert "Task metrics against the reference" in report_md and "type_agreement" in report_md
    # engine compare shows a changed task metric between two runs.
    shutil.copy(project / "out/files/report.json", project / "before.json")
    code, out, err = cli("run", recipe, "--set", "accuracy.with.samples=10")
    assert code == 0, out + err
    code, out, err = cli("compare", project / "before.json", project / "out/files/report.json")
    assert "metrics.type_agreement" in out or "metrics.worst_sample_error" in out, out + err


def _package_file(dist: str, file: str) -> Path:
    from importlib.metadata import distribution

    return Path(distribution(dist).locate_file(file))


def test_report_tables_never_cut_two_variant_ids_to_the_same_text(project, monkeypatch, capsys):
    """In a narrow terminal the candidates' table folds long ids instead of ending them in `…`."""
    from ortflow.engine.cli.console import Output

    ids = [
        "int8[calibration=percentile,activation_type=QUInt8,per_channel=true]",
        "int8[calibration=percentile,activation_type=QUInt8,per_channel=false]",
    ]
    sections = [
        {
            "stage": "pick",
            "tables": [
                {
                    "title": "Candidates",
                    "columns": ["candidate", "p50_ms", "meets constraints"],
                    "rows": [
                        [ids[0], 1.5, "yes"],
                        [ids[1], 1.4, "no: cosine_mean 0.97 < min 0.99"],
                    ],
                }
            ],
        }
    ]
    monkeypatch.setenv("COLUMNS", "60")
    Output().report_sections(sections)
    printed = capsys.readouterr().out
    assert "…" not in printed
    flat = "".join(
        line.split("│")[1].strip() for line in printed.splitlines() if line.count("│") >= 3
    )
    assert ids[0] in flat and ids[1] in flat, printed


def test_dynamic_int8_leaves_convolutions_float_and_inputs_match_by_name_not_order(project, cli):
    """NudeNet's YOLOv8n is all convolutions: dynamic INT8 would make them ConvInteger, slower than fp32 on
    CPUs, so by default it quantizes nothing and says why. Silero VAD with its inputs in another order is the
    same model to validate and time against the original."""
    import onnx

    model = onnx.load(str(_package_file("silero-vad", "silero_vad/data/silero_vad_16k_op15.onnx")))
    inputs = list(model.graph.input)
    del model.graph.input[:]
    model.graph.input.extend(reversed(inputs))
    onnx.save(model, str(project / "reordered.onnx"))
    shutil.copytree(RECIPES / "data", project / "data")
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: conv
        inputs:
          detector: {package: nudenet, file: nudenet/320n.onnx}
          vad: {package: silero-vad, file: silero_vad/data/silero_vad_16k_op15.onnx}
          reordered: reordered.onnx
        datasets:
          chunks: {loader: npz, with: {path: data/audio/vad-held-out.npz, batch_axes: {state: 1, sr: null}, limit: 16}}
        stages:
          dynamic: {uses: quantize_dynamic, in: {model: inputs.detector}}
          same: {uses: validate_accuracy, in: {reference: inputs.vad, candidates: [inputs.reordered], data: datasets.chunks},
                 with: {max: {max_abs: 0.0}}}
          speed: {uses: benchmark, in: {models: [inputs.vad, inputs.reordered], data: datasets.chunks}, with: {runs: 5}}
    """,
    )
    code, out, err = cli("run", project / "recipe.yaml", "-k")
    assert code == 1, out + err
    line = next(x for x in err.splitlines() if "stage 'dynamic'" in x)
    assert "quantized nothing" in line and "Conv is left float by default" in line, line
    assert not any("stage 'same'" in x or "stage 'speed'" in x for x in err.splitlines()), err


def test_detection_metric_arithmetic_on_hand_made_boxes():
    """The metric's own arithmetic on boxes+scores outputs (no claim about a model): one match, one box of
    the wrong class, one extra box, one missed."""
    import numpy as np

    from ortflow.engine.contracts.params import fill_defaults
    from ortflow.stages.metrics.detection import DetectionAgreement

    def outputs(boxes, classes, scores):
        table = np.zeros((1, len(boxes), 2))
        table[0, np.arange(len(boxes)), classes] = scores
        return {
            "boxes": [np.asarray([boxes], dtype=np.float32)],
            "scores": [table.astype(np.float32)],
        }

    reference = outputs(
        [[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], [0, 0, 1], [0.9, 0.8, 0.7]
    )
    candidate = outputs(
        [[1, 1, 11, 11], [40, 40, 50, 50], [60, 60, 70, 70]], [0, 0, 1], [0.85, 0.6, 0.5]
    )
    metric = DetectionAgreement()
    params = fill_defaults(
        {"boxes": "boxes", "scores": "scores", "box_format": "xyxy"}, metric.params_schema
    )
    assert metric.check(params) == []
    values = metric.compute(reference, candidate, [{}], params)
    assert values["det_precision"] == values["det_recall"] == values["det_f1"] == 1 / 3
    assert values["det_map50"] == 0.25  # class 0: AP 0.5 (one of two found, first); class 1: AP 0
    assert metric.compute(reference, reference, [{}], params) == {
        "det_precision": 1.0,
        "det_recall": 1.0,
        "det_f1": 1.0,
        "det_map50": 1.0,
    }
