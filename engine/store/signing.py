"""HMAC signatures for what a cache holds but must not be trusted blindly.

Two keys, neither of them stored in the cache:
- the local key, one per user (`~/.config/ortflow/local.key`, created on first use, mode 0600), signs the
  validated-recipe snapshots: whoever can write the cache cannot make `engine run` execute a loader the
  recipe does not name;
- the team key, `$ORTFLOW_SIGNING_KEY` (or the file `$ORTFLOW_SIGNING_KEY_FILE` names), which a team sets on
  every machine that may publish to a shared cache (CI, Dask workers): with it set, run records are signed when
  written and a record without a valid signature is never served. A record from a remote needs a valid
  signature even where no key is set (engine.store.records), so a remote is a trust boundary by default.
  Rotation: records signed with a previous key (`$ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE`, one a line) still
  verify; every new signature is made with the current key. Where keys come from and the rules they are held
  to: engine.store.team_keys.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from ortflow.engine.store.team_keys import (  # the names signing has always exported
    PREVIOUS_KEYS_ENV as PREVIOUS_KEYS_ENV,
)
from ortflow.engine.store.team_keys import (
    SIGNING_KEY_ENV as SIGNING_KEY_ENV,
)
from ortflow.engine.store.team_keys import (
    SIGNING_KEY_FILE_ENV as SIGNING_KEY_FILE_ENV,
)
from ortflow.engine.store.team_keys import (
    shared_key as shared_key,
)
from ortflow.engine.store.team_keys import (
    verifying_keys as verifying_keys,
)

KEY_BYTES = 32


def sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def signature_ok(key: bytes, payload: bytes, signature: object) -> bool:
    return isinstance(signature, str) and hmac.compare_digest(sign(key, payload), signature)


def signed_by_any(keys: list[bytes], payload: bytes, signature: object) -> bool:
    return any(signature_ok(key, payload, signature) for key in keys)


def new_key_file(path: Path) -> None:
    """A fresh random team key (64 hex digits) in a new file only its owner can read; never overwrites one."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.write(handle, (secrets.token_hex(KEY_BYTES) + "\n").encode("ascii"))
    finally:
        os.close(handle)


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
