"""`engine plan RECIPE --json` keys for every shipped recipe against a recorded baseline (tests/unit/plan_keys.json):
a refactor of the build model must change no key, since lock files and caches name builds by them. Stages whose
key holds the host (the lock says `host_specific`: timings, or a build ORT makes differently per machine) are left
out: their keys differ from one machine to the next by design.

After a deliberate change of keys: `python tests/unit/test_plan_keys.py --record` (and say why in the commit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("plan_keys.json")


def plan_keys(recipe: Path) -> dict[str, str]:
    """Each stage's key as `engine plan --json` computes it with an empty cache, host-specific stages left out."""
    lock = yaml.safe_load(Path(f"{recipe}.lock").read_text())["stages"]
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, "-m", "ortflow.engine.cli", "plan", str(recipe), "--json"],
            env={**os.environ, "ORTFLOW_CACHE": cache},
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    return {
        row["stage"]: row["key"]
        for row in rows
        if row["key"] and not lock.get(row["stage"], {}).get("host_specific")
    }


def all_keys() -> dict[str, dict[str, str]]:
    return {recipe.stem: plan_keys(recipe) for recipe in sorted((ROOT / "recipes").glob("*.yaml"))}


def test_no_shipped_recipe_key_changed():
    recorded = json.loads(BASELINE.read_text())
    found = all_keys()
    assert (
        sum(len(keys) for keys in recorded.values()) > 20
    )  # most stages' keys do not depend on the host
    changed = {
        f"{recipe}.{stage}": (recorded.get(recipe, {}).get(stage), found.get(recipe, {}).get(stage))
        for recipe in recorded.keys() | found.keys()
        for stage in recorded.get(recipe, {}).keys() | found.get(recipe, {}).keys()
        if recorded.get(recipe, {}).get(stage) != found.get(recipe, {}).get(stage)
    }
    shown = dict(sorted(changed.items())[:5])
    assert not changed, f"{len(changed)} keys changed (recorded, now), e.g. {shown}"


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    BASELINE.write_text(json.dumps(all_keys(), indent=1, sort_keys=True) + "\n")
    print(f"recorded {BASELINE}")
