"""Typed loader parameters: each built-in dataset loader reads its validated parameters as a frozen dataclass (its
`settings`), which stands for its params_schema, so a loader cannot read a parameter the schema does not declare,
nor default one otherwise (issue 43: parameters read by key from a dict of Any)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ortflow.api import ModelInput, settings_of, settings_problems
from ortflow.engine.contracts.params import fill_defaults
from ortflow.engine.contracts.registry import DATASETS, Registry

BUILT_IN = ("images", "npy_dir", "npz", "python", "random", "text")


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_loaders_settings_agree_with_its_params_schema(name):
    loader_cls = Registry.discover(DATASETS).get(name)
    assert loader_cls.settings is not None, f"loader '{name}' declares no settings dataclass"
    assert settings_problems(loader_cls.settings, loader_cls.params_schema) == []


def test_images_settings_read_defaults_and_arrays_as_tuples(tmp_path: Path):
    loader_cls = Registry.discover(DATASETS).get("images")
    params = fill_defaults({"path": tmp_path, "size": [8, 6]}, loader_cls.params_schema)
    read = settings_of(loader_cls.settings, params)
    assert read.path == tmp_path and read.size == (8, 6) and read.mean == (0, 0, 0)
    assert read.input is None and read.pad_value == 114 and read.skip_unreadable is False


def test_npz_feeds_read_through_settings_put_the_batch_axis_where_asked(tmp_path: Path):
    np.savez(
        tmp_path / "d.npz", x=np.arange(6, dtype=np.float32).reshape(3, 2), y=np.array([1, 2, 3])
    )
    loader_cls = Registry.discover(DATASETS).get("npz")
    params = {"path": tmp_path / "d.npz", "batch_axes": {"x": 1}, "labels": "y"}
    inputs = [ModelInput("x", "float32", (2, 1))]
    feeds = list(loader_cls().feeds(params, inputs))
    assert [f["x"].shape for f in feeds] == [(2, 1)] * 3
    assert loader_cls().labels(params).tolist() == [1, 2, 3]


def test_python_loader_passes_data_only_when_named_and_says_what_its_key_misses(tmp_path: Path):
    (tmp_path / "feeds.py").write_text(
        "import numpy as np\n"
        "def make(inputs, count, data=None):\n"
        "    for i in range(count):\n"
        "        yield {'x': np.full((1, 1), 0 if data is None else len(data.name), np.float32)}\n"
    )
    loader = Registry.discover(DATASETS).get("python")()
    params = {"path": tmp_path / "feeds.py", "function": "make", "kwargs": {"count": 2}}
    inputs = [ModelInput("x", "float32", (1, 1))]
    assert [f["x"].item() for f in loader.feeds(params, inputs)] == [0, 0]
    assert "only feeds.py is in its cache key: a file make() reads is not" in loader.key_caveat(
        params
    )
    named = {**params, "data": tmp_path / "abcd"}
    assert [f["x"].item() for f in loader.feeds(named, inputs)] == [4, 4]
    assert loader.key_caveat(named) is None
    assert loader.data_provenance(params).value == "unknown"
    assert loader.data_provenance({**params, "provenance": "real"}).value == "real"
