"""Under CI=true a skipped test fails the run unless its reason is on the allow-list below: in CI every
dependency a test needs is installed (.ci/run), so a skip there means a test silently stopped running. The only
skips CI allows are what its CPU-only machine cannot do (conftest imports these hooks)."""

from __future__ import annotations

import os

import pytest

# A fragment of the skip's reason -> why CI may skip it
ALLOWED_IN_CI = {
    "no usable TensorRT provider": "TensorRT needs an NVIDIA GPU, its driver and libnvinfer: CI has no GPU",
    "needs a usable CUDA device": "CUDA-graph capture needs onnxruntime-gpu and a GPU",
    "TensorRT is usable here": "what a machine without TensorRT reports: runs on CI, skips only on a GPU host",
    "a usable CUDA device is present": "what a machine without a GPU reports: runs on CI, skips only on a GPU host",
    "bench/gpu.py:": "the GPU bench script's quick mode needs a GPU",
}
_UNEXPECTED: list[str] = []


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("CI") != "true" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _reason(report)
    if not any(fragment in reason for fragment in ALLOWED_IN_CI):
        _UNEXPECTED.append(f"{report.nodeid}: {reason}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _UNEXPECTED:
        terminalreporter.section("skips CI does not allow (tests/ci_skips.py)", red=True)
        for line in _UNEXPECTED:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            "install what the test needs in .ci/run, or add its reason to ALLOWED_IN_CI saying why"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _UNEXPECTED and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
