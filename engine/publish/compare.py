"""`engine compare`: what differs between two lock files, or two runs' report.json files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.leaves.json_types import Json, obj
from ortflow.engine.publish.lockfile import load_lock_yaml, read_bounded_text

FIELDS = ("type", "version", "status")  # compared as a whole
GROUPS = ("params", "env", "inputs", "outputs", "metrics")  # compared key by key


@dataclass(frozen=True)
class Compared:
    """A stage as `engine compare` reads it from a lock file or a report.json: the file's values as written
    (a report has no version, params, env or inputs; a lock no status), outputs by store digest. They are
    compared as JSON, whatever each stage type put in them."""

    type: Json
    version: Json
    status: Json
    params: Json
    env: Json
    inputs: Json
    outputs: dict[str, str]
    metrics: Json


def compare_files(before: Path, after: Path) -> list[tuple[str, str, str, str]]:
    """Rows of (stage, what, before, after) for everything that changed."""
    (old, old_kind), (new, new_kind) = _load(before), _load(after)
    if old_kind != new_kind:
        raise OrtflowError(
            f"{before} is a {old_kind} and {after} a {new_kind} — compare two lock files or two report.json files"
        )
    rows: list[tuple[str, str, str, str]] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            rows.append(
                (
                    name,
                    "stage",
                    "absent" if a is None else "present",
                    "absent" if b is None else "present",
                )
            )
            continue
        for field in FIELDS:
            x, y = getattr(a, field), getattr(b, field)
            if x != y and (x or y):
                rows.append((name, field, str(x), str(y)))
        for group in GROUPS:
            for key, (x, y) in sorted(
                _diff(getattr(a, group) or {}, getattr(b, group) or {}).items()
            ):
                rows.append((name, f"{group}.{key}", _short(x), _short(y)))
    return rows


def _load(path: Path) -> tuple[dict[str, Compared], str]:
    """Stages by name, from a lock file (YAML) or a report.json, and which of the two it was. Both are
    bounded in size, and a lock is read as `engine run` reads it: anchors and aliases, which could expand a
    small file into gigabytes, are refused."""
    try:
        if path.suffix == ".json":
            data = json.loads(
                read_bounded_text(path, "a report.json", "compare two runs' report.json files")
            )
        else:
            data = load_lock_yaml(path)
    except (
        OSError,
        ValueError,
        RecursionError,
    ) as exc:  # RecursionError: JSON nested thousands deep
        raise OrtflowError(f"{path}: cannot read it as a lock file or report.json: {exc}") from None
    try:
        if (
            isinstance(data, dict) and isinstance(data.get("stages"), dict) and "schema" in data
        ):  # a lock file
            return {n: _compared(e) for n, e in data["stages"].items()}, "lock file"
        if isinstance(data, dict) and isinstance(data.get("stages"), list):  # a report.json
            return {s["stage"]: _compared(s, report=True) for s in data["stages"]}, "report"
    except (TypeError, KeyError, AttributeError) as exc:
        raise OrtflowError(
            f"{path}: a damaged lock file or report.json ({type(exc).__name__}: {exc})"
        ) from None
    raise OrtflowError(f"{path}: neither an ortflow lock file nor a report.json")


def _compared(entry: Any, report: bool = False) -> Compared:
    """A lock entry or a report.json's stage entry (YAML or JSON as read: a damaged one raises TypeError,
    KeyError or AttributeError, which _load reports)."""
    # a lock entry is copied first: one that is no mapping fails with the TypeError compare always named
    get = entry.get if report else {**entry}.get
    outputs = {k: v["digest"] for k, v in (get("outputs") or {}).items()}
    if report:  # a report.json's entry has no version, params, env or inputs
        return Compared(get("type"), None, get("status"), None, None, None, outputs, get("metrics"))
    version, params, env, inputs = get("version"), get("params"), get("env"), get("inputs")
    status = get("status")
    return Compared(get("type"), version, status, params, env, inputs, outputs, get("metrics"))


def _diff(a: Json, b: Json, prefix: str = "") -> dict[str, tuple[Json, Json]]:
    """Each key (a dotted path into nested objects) whose value differs between two JSON objects."""
    left, right = obj(a), obj(b)
    found: dict[str, tuple[Json, Json]] = {}
    for key in sorted(set(left) | set(right), key=str):
        x, y = left.get(key), right.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            found.update(_diff(x, y, f"{prefix}{key}."))
        elif x != y:
            found[f"{prefix}{key}"] = (x, y)
    return found


def _short(value: Json) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."
