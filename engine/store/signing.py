"""HMAC signatures for what a cache holds but must not be trusted blindly.

Two keys, neither of them stored in the cache:
- the local key, one per user (`~/.config/ortflow/local.key`, created on first use, mode 0600), signs the
  validated-recipe snapshots: whoever can write the cache cannot make `engine run` execute a loader the
  recipe does not name;
- the shared key, `$ORTFLOW_SIGNING_KEY`, which a team sets on every machine that may publish to a shared
  cache (CI, Dask workers): with it set, run records are signed when written and a record without a valid
  signature is never served.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

SIGNING_KEY_ENV = "ORTFLOW_SIGNING_KEY"
KEY_BYTES = 32


def sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def signature_ok(key: bytes, payload: bytes, signature: object) -> bool:
    return isinstance(signature, str) and hmac.compare_digest(sign(key, payload), signature)


def shared_key() -> bytes | None:
    """The team's key for run records, if this machine was given one."""
    text = os.environ.get(SIGNING_KEY_ENV, "")
    return text.encode("utf-8") if text else None


def config_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "ortflow"


def local_key() -> bytes | None:
    """This user's key, created on first use; None where it cannot be kept (no writable home folder), in
    which case nothing is signed with it and what it would protect is not used."""
    path = config_dir() / "local.key"
    try:
        key = path.read_bytes()
        if len(key) >= KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        return _create_key(path)
    except OSError:
        return None


def _create_key(path: Path) -> bytes:
    """Written to a private temporary file and linked into place, so two processes creating it at once
    end up using the same key (the loser of the link reads the winner's)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}")
    handle = os.open(staging, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.write(handle, secrets.token_bytes(KEY_BYTES))
    finally:
        os.close(handle)
    try:
        os.link(staging, path)
    except FileExistsError:
        pass
    finally:
        staging.unlink(missing_ok=True)
    key = path.read_bytes()
    if len(key) < KEY_BYTES:
        raise OSError(f"{path} holds a key too short to use")
    return key
