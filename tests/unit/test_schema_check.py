"""engine.leaves.schema_check: the compiled checks of schemas/lock.schema.json, run_record.schema.json and the result
documents' schemas say yes and no exactly where jsonschema does (which explains the no), on the shipped locks, a
run record and each result document, and on every one-value damage of them."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

import pytest
from jsonschema import Draft202012Validator

from ortflow.engine.leaves import schema_check
from ortflow.engine.publish.lockfile import load_lock_yaml

ROOT = Path(__file__).resolve().parents[2]
D = "ab" * 32
RECORD = {
    "key": D,
    "stage": "s",
    "type": "concat",
    "version": "1",
    "params": {"text": "+x"},
    "inputs": {"parts": [D], "one": D},
    "env": {"onnxruntime": "1.2"},
    "ran_on": {"host": "h"},
    "summary": "",
    "metrics": {"x": 1.5},
    "data_source": None,
    "seconds": 0.5,
    "log": "",
    "gate_failed": None,
    "steps": [D],
    "created": "",
    "signature": "sig",
    "outputs": {
        "file": {"digest": D, "kind": "file", "filename": "a.txt", "size": 3, "values": "AAAA"}
    },
}
VALUES = [None, True, 1, 2.0, -1, "x", D, "../a", [], [D], {}, {"k": "v"}]


def damaged(document: Any, path: tuple = ()) -> Iterator[Any]:
    """The document with one value replaced (by each of VALUES) or one key taken out, everywhere."""
    node = document
    for part in path:
        node = node[part]
    children = (
        list(node.items())
        if isinstance(node, dict)
        else list(enumerate(node))
        if isinstance(node, list)
        else []
    )
    for name, child in children[
        :6
    ]:  # the first few of each collection: enough shapes, few thousand documents
        for value in VALUES:
            copied = copy.deepcopy(document)
            _at(copied, path)[name] = value
            yield copied
        if isinstance(node, dict):
            copied = copy.deepcopy(document)
            del _at(copied, path)[name]
            yield copied
        yield from damaged(document, (*path, name))


def _at(document: Any, path: tuple) -> Any:
    for part in path:
        document = document[part]
    return document


def agree(name: str, document: Any) -> None:
    schema = json.loads(
        resources.files("ortflow.schemas").joinpath(f"{name}.schema.json").read_text()
    )
    expected = Draft202012Validator(schema).is_valid(document)
    found = schema_check.problem(name, document)
    assert (found is None) == expected, (found, document)


def test_a_run_record_and_its_damages():
    agree("run_record", RECORD)
    for document in damaged(RECORD):
        agree("run_record", document)


@pytest.mark.parametrize("lock", ["quickstart.yaml.lock", "minilm-cpu-sweep.yaml.lock"])
def test_shipped_locks_and_their_damages(lock):
    data = load_lock_yaml(ROOT / "recipes" / lock)
    agree("lock", data)
    small = {**data, "stages": dict(list(data["stages"].items())[:2])}
    for document in damaged(small):
        agree("lock", document)


def test_a_keyword_it_does_not_compile_is_refused():
    with pytest.raises(ValueError, match="oneOf"):
        schema_check._compile({"oneOf": []}, {})


@pytest.mark.parametrize("name", ["benchmark_results", "accuracy_results", "selection"])
def test_result_documents_and_their_damages(name):
    from .test_documents import ACCURACY, BENCHMARK, SELECTION

    document = {
        "benchmark_results": BENCHMARK,
        "accuracy_results": ACCURACY,
        "selection": SELECTION,
    }[name]
    agree(name, document)
    for damage in damaged(document):
        agree(name, damage)
