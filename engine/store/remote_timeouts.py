"""A bounded connect timeout on every remote operation: an endpoint that does not answer fails in seconds,
not in minutes (an unreachable Azure endpoint took 196 s with azure-core's defaults). The storage libraries'
own option names, set only where the user's `options` do not:

- S3 (s3fs/botocore): `config_kwargs: {connect_timeout: N, retries: {max_attempts: 3, mode: standard}}`
- GCS (gcsfs/aiohttp): `session_kwargs: {timeout: aiohttp.ClientTimeout(sock_connect=N)}`
- Azure (adlfs/azure-core, az:// abfs:// adl://): `connection_timeout: N`

N is CONNECT_TIMEOUT_S, or `$ORTFLOW_REMOTE_CONNECT_TIMEOUT` (seconds) where set (docs/cache.md)."""

from __future__ import annotations

import os
from typing import Any, Mapping

from ortflow.engine.leaves.errors import StoreError

CONNECT_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_ENV = "ORTFLOW_REMOTE_CONNECT_TIMEOUT"
S3_ATTEMPTS = (
    3  # botocore's own total, first try included: at most 3 connect timeouts before an error
)
AZURE = ("az", "abfs", "abfss", "adl")
GCS = ("gs", "gcs")


def connect_timeout() -> float:
    text = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not text:
        return CONNECT_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 600:
        raise StoreError(
            f"${CONNECT_TIMEOUT_ENV}={text!r} is not a number of seconds between 0 and 600 — e.g. 10, "
            "or unset it for the default"
        )
    return seconds


def with_timeouts(protocol: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` with the backend's connect timeout added (the user's own setting wins)."""
    found = dict(options)
    seconds = connect_timeout()
    if protocol in ("s3", "s3a"):
        config = dict(found.get("config_kwargs") or {})
        config.setdefault("connect_timeout", seconds)
        config.setdefault("retries", {"max_attempts": S3_ATTEMPTS, "mode": "standard"})
        found["config_kwargs"] = config
    elif protocol in AZURE:
        found.setdefault("connection_timeout", max(1, round(seconds)))
    elif protocol in GCS:
        session = dict(found.get("session_kwargs") or {})
        if "timeout" not in session:
            try:
                import aiohttp
            except ImportError:  # gcsfs absent too: opening the remote says what to install
                return found
            session["timeout"] = aiohttp.ClientTimeout(sock_connect=seconds)
        found["session_kwargs"] = session
    return found
