"""Compare `engine plan RECIPE --json` keys for every shipped recipe against a saved baseline (one JSON file per
recipe, made the same way with the code before a refactor): a refactor of the build model must change no key.

Usage: python tests/unit/compare_plan_keys.py BASELINE_DIR   (exit 1 when any key differs)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def plan(recipe: Path, cache: Path) -> list[dict]:
    env = {**os.environ, "ORTFLOW_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "plan", str(recipe), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(done.stdout) if done.stdout.strip() else []


def _stage(row: dict) -> str:
    return row.get("stage") or row["name"]  # `plan --json` said `name` before one --json vocabulary


def _verdict(row: dict) -> tuple:
    return (_stage(row), row["action"], row.get("reason", ""), row["against_lock"], row["key"])


def main(baseline: Path) -> int:
    differ = compared = 0
    for recipe in sorted((ROOT / "recipes").glob("*.yaml")):
        before = json.loads((baseline / f"{recipe.stem}.json").read_text())
        with tempfile.TemporaryDirectory() as cache:
            after = plan(recipe, Path(cache))
        old = {_stage(row): row["key"] for row in before}
        new = {_stage(row): row["key"] for row in after}
        bad = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
        rows = sum(1 for a, b in zip(before, after, strict=False) if _verdict(a) != _verdict(b))
        rows += abs(len(before) - len(after))
        bad += [f"{rows} rows differ in action/reason/against_lock"] if rows else []
        compared += sum(1 for key in old.values() if key)
        differ += len(bad)
        print(
            f"{recipe.stem}: {len(old)} stages, {sum(1 for k in old.values() if k)} keys, {len(bad)} differ {bad[:3]}"
        )
    print(f"total: {compared} keys compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
