"""Cache keys: the sha256 of everything that determines a stage's outputs, in canonical JSON."""

from __future__ import annotations

import json
from typing import Any

from ortflow.engine.store.hashing import hash_bytes


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stage_key(
    stage_type: str, stage_version: str, params: dict[str, Any], inputs: dict[str, Any], env: dict[str, str]
) -> str:
    """`inputs` maps each input name to a digest (or a list of digests); paths never enter the key."""
    return hash_bytes(
        canonical_json(
            {"type": stage_type, "version": stage_version, "params": params, "inputs": inputs, "env": env}
        ).encode()
    )
