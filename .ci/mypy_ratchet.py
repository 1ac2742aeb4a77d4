"""mypy as a ratchet: the error count of each package may shrink, never grow.

The repository keeps engine/, stages/, loaders/ and schemas/ at its top and installs them as ortflow.engine and
so on (pyproject's package-dir). The editable install maps them with an import hook mypy cannot follow, so this
script lays the package out as it installs (symbolic links under .mypy_cache/tree) and checks it there, with the
cache kept between runs (a second run takes about a second). Errors are counted per directory (engine/run,
stages/quantization, tests/unit...) and compared with .ci/mypy-baseline.json:

    python .ci/mypy_ratchet.py            # fails (exit 1) when a count grows, naming the new errors
    python .ci/mypy_ratchet.py --update   # records the counts as they are now (after lowering them)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / ".ci" / "mypy-baseline.json"
CACHE = REPO / ".mypy_cache"
TREE = CACHE / "tree"
# where each part of the installed package lives in the repository (pyproject's [tool.setuptools.package-dir])
LAYOUT = {
    "ortflow/__init__.py": "ortflow/__init__.py",
    "ortflow/api": "ortflow/api",
    "ortflow/engine": "engine",
    "ortflow/stages": "stages",
    "ortflow/loaders": "loaders",
    "ortflow/schemas": "schemas",
    "tests": "tests",
}
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: ")


def lay_out_tree() -> None:
    """Link the repository's folders into the package layout the wheel installs (idempotent)."""
    for installed, source in LAYOUT.items():
        link = TREE / installed
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(REPO / source, link.parent)
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def repo_path(checked: str) -> str:
    """ortflow/engine/run/runner.py -> engine/run/runner.py: the path a developer opens."""
    for installed, source in sorted(LAYOUT.items(), key=lambda item: -len(item[0])):
        if checked == installed or checked.startswith(installed + "/"):
            return source + checked[len(installed) :]
    return checked


def run_mypy() -> list[str]:
    """mypy's error lines, their paths rewritten to the repository's."""
    lay_out_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    command += ["--cache-dir", str(CACHE), "--no-error-summary", "--no-pretty", "ortflow", "tests"]
    done = subprocess.run(command, cwd=TREE, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a bad config, a crash)
        sys.exit(f"mypy failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    errors = []
    for line in done.stdout.splitlines():
        found = ERROR.match(line)
        if found:
            errors.append(repo_path(found["path"]) + line[len(found["path"]) :])
    return errors


def package(error: str) -> str:
    """The directory an error's file lies in: the unit the baseline counts."""
    return str(Path(ERROR.match(error)["path"]).parent)  # type: ignore[index]  # only matched lines come here


def compare(counts: Counter[str], baseline: dict[str, int], errors: list[str]) -> int:
    """Print what grew (with its errors) and what shrank; 1 when anything grew."""
    grown = sorted(p for p in counts if counts[p] > baseline.get(p, 0))
    shrunk = sorted(p for p in baseline if counts.get(p, 0) < baseline[p])
    for name in grown:
        print(
            f"{name}: {counts[name]} mypy errors, {baseline.get(name, 0)} recorded in {BASELINE.name}:"
        )
        print("\n".join(f"  {e}" for e in errors if package(e) == name))
    if grown:
        print(
            f"mypy: more errors in {', '.join(grown)}: fix the new ones above (the ratchet never goes up)"
        )
        return 1
    if shrunk:
        lowered = ", ".join(f"{p} {baseline[p]} -> {counts.get(p, 0)}" for p in shrunk)
        print(
            f"mypy: fewer errors ({lowered}): record them with `python .ci/mypy_ratchet.py --update`"
        )
    print(f"mypy: {sum(counts.values())} errors, none new (baseline {sum(baseline.values())})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--update", action="store_true", help="record the current counts as the baseline"
    )
    args = parser.parse_args()
    errors = run_mypy()
    counts = Counter(package(e) for e in errors)
    if args.update:
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n")
        print(
            f"recorded {sum(counts.values())} mypy errors in {len(counts)} packages to {BASELINE}"
        )
        return 0
    return compare(counts, json.loads(BASELINE.read_text()), errors)


if __name__ == "__main__":
    sys.exit(main())
