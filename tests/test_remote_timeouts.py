"""Issue 38, finding 8: a remote that does not answer fails within a bounded connect timeout, and Ctrl-C
during a push says what a push leaves. The endpoint is a real socket whose accept queue is full, so the
kernel drops every new connection attempt: the connect hangs as it does for an unreachable cloud endpoint."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import engine_process, two_stage_recipe, write

from ortflow.engine.store.remote_timeouts import with_timeouts


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """http://127.0.0.1:PORT that never completes a TCP handshake (its one-slot accept queue is full)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(server.getsockname())
        except BlockingIOError:
            pass
        fillers.append(filler)
    time.sleep(0.2)
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    for sock in (*fillers, server):
        sock.close()


def pushing(project: Path, cli, endpoint: str, timeout: str) -> tuple[Path, dict[str, str]]:
    """The recipe run (its lock file and cache made), then ortflow.yaml naming the silent remote."""
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    write(
        project / "ortflow.yaml",
        f"remote: {{url: 's3://bucket/ortflow', options: {{endpoint_url: '{endpoint}'}}}}\n",
    )
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "ORTFLOW_REMOTE_CONNECT_TIMEOUT": timeout,
    }
    return recipe, env


def test_an_endpoint_that_does_not_answer_fails_within_the_connect_timeout(
    project, cli, silent_endpoint
):
    recipe, env = pushing(project, cli, silent_endpoint, "1")
    start = time.monotonic()
    child = engine_process("cache", "pull", recipe, "--allow-unsigned", env=env, cwd=project)
    try:
        _, err = child.communicate(timeout=60)  # botocore's defaults: 60 s a try, several tries
    finally:
        child.kill()
    took = time.monotonic() - start
    print(f"failed after {took:.1f} s")
    assert child.returncode != 0 and took < 20, (took, err)
    assert "ConnectTimeout" in err or "timeout" in err.lower(), err


def test_ctrl_c_during_a_push_says_what_a_push_leaves(project, cli, silent_endpoint):
    recipe, env = pushing(project, cli, silent_endpoint, "30")
    child = engine_process("cache", "push", recipe, "--allow-unsigned", env=env, cwd=project)
    time.sleep(4)  # connecting, well inside the 30 s
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "interrupted: the push stopped" in err and "finished stages are cached" not in err, err


def test_each_backend_gets_its_own_connect_timeout_unless_the_user_set_one(monkeypatch):
    monkeypatch.setenv("ORTFLOW_REMOTE_CONNECT_TIMEOUT", "7")
    assert with_timeouts("s3", {})["config_kwargs"]["connect_timeout"] == 7
    assert (
        with_timeouts("s3", {"config_kwargs": {"connect_timeout": 2}})["config_kwargs"][
            "connect_timeout"
        ]
        == 2
    )
    assert with_timeouts("az", {})["connection_timeout"] == 7
    assert with_timeouts("abfs", {"connection_timeout": 3})["connection_timeout"] == 3
    aiohttp = pytest.importorskip("aiohttp")
    assert with_timeouts("gs", {})["session_kwargs"]["timeout"] == aiohttp.ClientTimeout(
        sock_connect=7
    )
