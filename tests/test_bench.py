"""No bench script rots (issue 28): every script in bench/ runs in its quick mode (`--quick`: tiny runs on the
same code path, bench/quick.py) and must exit 0 without a traceback. A script that needs what this machine lacks
(a browser, a GPU) says `skipped: <why>` in one line and exits 0; the test reports that skip.

    pytest -m bench      # its own CI step (.ci/run), about 3 minutes on 2 busy cores; not in the everyday run
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
HELPERS = {"corpus_feeds", "gpu_models", "quick"}  # imported by the scripts, not run on their own
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in HELPERS)
LIMIT_S = 300  # one script's quick mode; each takes well under a minute when it works


@pytest.mark.bench
@pytest.mark.parametrize("script", SCRIPTS)
def test_quick_mode_runs(script, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    said = f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, said
    assert done.returncode == 0, f"bench/{script}.py --quick exited {done.returncode}\n{said}"
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped: ")]
    if skipped:
        pytest.skip(f"bench/{script}.py: {skipped[0].removeprefix('skipped: ')}")


def test_every_bench_script_has_a_quick_mode():
    """A new script without --quick would rot unnoticed: the bench step would only fail on it at CI time."""
    for script in SCRIPTS:
        text = (BENCH / f"{script}.py").read_text()
        assert "quick.add_flag(" in text or '"--quick" in argv' in text, (
            f"bench/{script}.py has no --quick (bench/quick.py)"
        )
    ci = (REPO / ".ci" / "run").read_text()
    assert "pytest -m bench" in ci
