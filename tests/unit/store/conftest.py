"""What the store's record tests share: a process with no team signing key set, so that a record's checks are the
ones for an unsigned cache unless a test sets a key itself."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_signing_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No signing key in the environment (the team's, its file, or previous ones)."""
    for name in (
        "ORTFLOW_SIGNING_KEY",
        "ORTFLOW_SIGNING_KEY_FILE",
        "ORTFLOW_SIGNING_KEYS_PREVIOUS",
    ):
        monkeypatch.delenv(name, raising=False)
