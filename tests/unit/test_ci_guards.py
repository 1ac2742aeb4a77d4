"""CI's guards against tests that stop running unnoticed: under CI=true an unexpected skip fails the run
(tests/ci_skips.py); outside CI a missing data wheel skips naming its install script (tests/data_wheels.py);
mypy's error counts may only go down (.ci/mypy_ratchet.py). Each is run for real: pytest in a subprocess on a
planted test, the ratchet's comparison on counts that grew."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PLANTED = """
import pytest
from importlib.metadata import distribution

def test_a_dependency_is_missing():
    pytest.skip("planted: a dependency is missing")

@pytest.mark.skipif(True, reason="no usable TensorRT provider (planted)")
def test_on_a_gpu_only():
    pass

def test_a_data_wheel_is_missing():
    distribution("a-data-wheel-nobody-installed")
"""


def _pytest(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from ci_skips import pytest_runtest_logreport, pytest_sessionfinish, pytest_terminal_summary\n"
        "from data_wheels import pytest_runtest_call, pytest_runtest_setup\n"
    )
    (tmp_path / "test_planted.py").write_text(PLANTED)
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "true"} if ci else {})
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )


def test_outside_ci_skips_pass_and_a_missing_data_wheel_names_its_script(tmp_path):
    done = _pytest(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout
    assert "3 skipped" in done.stdout
    assert (
        "a-data-wheel-nobody-installed is not installed: run `bash .ci/data-wheels.sh`"
        in done.stdout
    )


def test_under_ci_an_unexpected_skip_fails_the_run_and_a_gpu_only_one_does_not(tmp_path):
    done = _pytest(tmp_path, ci=True)
    assert done.returncode == 1, done.stdout
    unexpected = done.stdout.split("skips CI does not allow", 1)[1].split("short test summary", 1)[
        0
    ]
    assert "test_a_dependency_is_missing: Skipped: planted: a dependency is missing" in unexpected
    assert "test_on_a_gpu_only" not in unexpected  # on the allow-list: CI has no GPU
    assert "1 failed" in done.stdout  # the missing data wheel fails in CI, which installs them


def _ratchet():
    spec = importlib.util.spec_from_file_location(
        "mypy_ratchet", TESTS.parent / ".ci" / "mypy_ratchet.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mypy_ratchet_fails_when_a_count_grows_and_says_how_to_lower_it(capsys):
    ratchet = _ratchet()
    new = "engine/run/plan.py:9: error: Incompatible types in assignment  [assignment]"
    assert ratchet.compare(Counter({"engine/run": 1}), {"engine": 3}, [new]) == 1
    assert new in capsys.readouterr().out
    assert ratchet.compare(Counter({"engine": 2}), {"engine": 3}, []) == 0
    assert "engine 3 -> 2" in capsys.readouterr().out
    assert ratchet.repo_path("ortflow/engine/run/plan.py") == "engine/run/plan.py"
    assert ratchet.repo_path("ortflow/api/onnx.py") == "ortflow/api/onnx.py"
