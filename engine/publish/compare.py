"""`engine compare`: what differs between two lock files, or two runs' report.json files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.publish.lockfile import load_lock_yaml, read_bounded_text


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
        for field in ("type", "version", "status"):
            if a.get(field) != b.get(field) and (a.get(field) or b.get(field)):
                rows.append((name, field, str(a.get(field)), str(b.get(field))))
        for group in ("params", "env", "inputs", "outputs", "metrics"):
            for key, (x, y) in sorted(_diff(a.get(group) or {}, b.get(group) or {}).items()):
                rows.append((name, f"{group}.{key}", _short(x), _short(y)))
    return rows


def _load(path: Path) -> tuple[dict[str, dict[str, Any]], str]:
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
            return {
                n: {**e, "outputs": {k: v["digest"] for k, v in (e.get("outputs") or {}).items()}}
                for n, e in data["stages"].items()
            }, "lock file"
        if isinstance(data, dict) and isinstance(data.get("stages"), list):  # a report.json
            return {
                s["stage"]: {
                    "type": s.get("type"),
                    "status": s.get("status"),
                    "metrics": s.get("metrics"),
                    "outputs": {k: v["digest"] for k, v in (s.get("outputs") or {}).items()},
                }
                for s in data["stages"]
            }, "report"
    except (TypeError, KeyError, AttributeError) as exc:
        raise OrtflowError(
            f"{path}: a damaged lock file or report.json ({type(exc).__name__}: {exc})"
        ) from None
    raise OrtflowError(f"{path}: neither an ortflow lock file nor a report.json")


def _diff(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> dict[str, tuple[Any, Any]]:
    found: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(a) | set(b), key=str):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            found.update(_diff(x, y, f"{prefix}{key}."))
        elif x != y:
            found[f"{prefix}{key}"] = (x, y)
    return found


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."
