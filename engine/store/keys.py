"""Cache keys: the sha256 of everything that determines a stage's outputs, in canonical JSON."""

from __future__ import annotations

import json
from typing import Any

from ortflow.engine.environment import HOST_FACTS
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


IDENTITY = ("type", "version", "params", "inputs", "env")  # what a key is computed from, as a record names it


def portable_env(env: dict[str, str]) -> dict[str, str]:
    """The environment facts that are the same on every machine with the same software."""
    return {name: value for name, value in env.items() if name not in HOST_FACTS}


def lock_entry_matches(entry: Any, key: str, identity: dict[str, Any]) -> bool:
    """Whether a lock-file entry records this build: by its key, or, for a host-specific entry (which
    records no key: engine.record.lockfile), by what the result was made from. `identity` holds the
    job's type, version, params, inputs and env, as a run record names them."""
    if not isinstance(entry, dict):
        return False
    if "key" in entry:
        return entry["key"] == key
    wanted = {**identity, "env": portable_env(identity["env"])}
    return entry.get("host_specific") is True and all(entry.get(field) == wanted[field] for field in IDENTITY)
