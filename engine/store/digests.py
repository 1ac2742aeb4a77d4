"""Content digests of a recipe's sources (input files, datasets): what their cache keys are made of."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.engine.leaves.environment import facts
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.ort.onnx_model import (
    ExternalDataOutside,
    NotAnOnnxModel,
    check_data_location,
    external_data_files,
)
from ortflow.engine.store.hashing import HashCache, hash_bytes
from ortflow.engine.store.keys import canonical_json

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import DatasetLoader


def input_digest(path: Path, hashes: HashCache) -> str:
    """An input's content digest. For an ONNX model stored with external data, the data files it names
    (beside it) are part of it: a changed weights file must change every key downstream."""
    digest = hashes.hash_path(path)
    if path.suffix != ".onnx" or not path.is_file():
        return digest

    def locations() -> str:
        if not _may_name_external_data(path):
            return "[]"
        try:
            return json.dumps(external_data_files(path))
        except (
            NotAnOnnxModel
        ):  # decided by the bytes alone, so safe to remember: the stage reading it says so
            return "[]"

    try:
        external = json.loads(hashes.derived(f"onnx-external-data:{digest}", locations))
        for (
            name
        ) in external:  # again on every call: a symbolic link beside the model may have changed
            check_data_location(path, name)
    except (
        ExternalDataOutside
    ) as exc:  # where a model enters ortflow: nothing outside its folder is read
        raise OrtflowError(f"input model {path}: {exc}") from None
    if not external:
        return digest
    missing = [name for name in external if not (path.parent / name).exists()]
    if missing:  # ORT would only say "External data path validation failed" once a stage loads it
        raise OrtflowError(
            f"input model {path}: its weights are stored in {', '.join(missing)}, which is not in "
            f"{path.parent} — put the data file(s) beside the model, or re-save it as one file"
        )
    parts = {name: hashes.hash_path(path.parent / name) for name in external}
    return hash_bytes(canonical_json({"model": digest, "external_data": parts}).encode())


def content_digest(
    loader_cls: type[DatasetLoader], params: Mapping[str, Any], hashes: HashCache
) -> str:
    """A dataset's identity: loader type and version, parameters, its files by content (never by path),
    and the library versions it declares (a new tokenizer release may tokenize differently)."""
    files = set(loader_cls.file_params)
    hashed = {k: hashes.hash_path(v) if k in files else v for k, v in params.items()}
    identity = {
        "loader": loader_cls.type,
        "version": loader_cls.version,
        "params": hashed,
        "env": facts(tuple(loader_cls().env_facts())),
    }
    return hash_bytes(canonical_json(identity).encode())


def _may_name_external_data(path: Path) -> bool:
    """A model that names external data holds the key string "location" in a tensor's external_data entry;
    one whose bytes lack it has none, and is not parsed (importing onnx and parsing a large model costs
    more than the rest of a cold plan)."""
    marker, overlap = b"location", len(b"location") - 1
    tail = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            if marker in tail + chunk:
                return True
            tail = chunk[-overlap:]
    return False
