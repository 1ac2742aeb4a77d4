"""Cache keys: the sha256 of everything that determines a stage's outputs, in canonical JSON. The key is
computed by engine.contracts.builds.Identity, once per job; these names remain for code that imports them here."""

from __future__ import annotations

from collections.abc import Mapping

from ortflow.engine.contracts.builds import IDENTITY, Identity, canonical_json, portable_env
from ortflow.engine.leaves.json_types import Json

__all__ = ["IDENTITY", "canonical_json", "portable_env", "stage_key"]


def stage_key(
    stage_type: str,
    stage_version: str,
    params: Mapping[str, Json],
    inputs: Mapping[str, str | list[str]],
    env: dict[str, str],
) -> str:
    """`inputs` maps each input name to a digest (or a list of digests); paths never enter the key."""
    return Identity(stage_type, stage_version, params, inputs, env).key
