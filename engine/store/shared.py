"""The local store with a remote behind it (`engine run --remote`): a stage key missing here is looked up on
the remote before the stage runs, and its record and objects are downloaded and checked (engine.store.transfer)
exactly as `engine cache pull` does; an object asked for that is not here (a Dask worker built it) is fetched
by its hash. A remote that cannot be reached makes the run build locally, with a warning."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.store.artifacts import ArtifactStore
from ortflow.engine.store.meter import NoMeter
from ortflow.engine.store.remote import Remote
from ortflow.engine.store.remote_trust import Claims, ClaimsSource, remote_claims
from ortflow.engine.store.transfer import Tally, fetch_objects, fetch_run


class SharedStore(ArtifactStore):
    def __init__(
        self,
        root: Path,
        remote: Remote,
        say: Callable[[str], None] = lambda _m: None,
        warn: Callable[[str], None] = lambda _m: None,
    ):
        super().__init__(root)
        self.remote = remote
        self.say, self.warn = (
            say,
            warn,
        )  # a line per stage pulled, or per problem (printed above the run's spinner)
        self._asked: set[str] = set()  # keys looked up remotely in this run: one request per key
        self._claims: Claims | None = None
        self._lock = threading.Lock()

    def read_run_json(self, key: str, stage: str = "") -> RunDocument | None:
        """This cache's record, else the remote's, checked as `engine cache pull` checks it (a record from a
        remote must be signed unless the user accepted unsigned ones); a refusal is a one-line warning naming
        the stage, which then builds here. read_run (the typed record) reads through this too."""
        record = super().read_run_json(key)
        if record is not None:
            return record
        with self._lock:
            if key in self._asked:
                return None
            self._asked.add(key)
        stage = stage or key[:12]
        try:
            record, tally = fetch_run(self, self.remote, key, stage, self._claims_for(key))
        except Exception as exc:  # noqa: BLE001 - boundary: remote store; unreachable or refusing, the stage builds here
            self.warn(
                f"remote {self.remote.shown}: looking up {stage} failed "
                f"({type(exc).__name__}: {_redacted(str(exc), self.remote)}); building it here"
            )
            return None
        for problem in tally.problems:
            self.warn(f"{problem}; building it here")
        if record is not None:
            self.say(f"pulled {stage} ({tally.bytes / 1e6:.1f} MB) from {self.remote.shown}")
        return record

    def _claims_for(self, key: str) -> ClaimsSource:
        """Which remote records name which objects (engine.store.remote_trust), read once per store and again
        when the record asked for was pushed after they were read."""

        def claims() -> Claims:
            with self._lock:
                read = self._claims
                if read is None or not any(key in keys for keys in read.values()):
                    read = remote_claims(self.remote, self.remote.listing().runs)
                    self._claims = read
                return read

        return claims

    def materialize(self, digest: str, dest: Path) -> None:
        if not self.object_intact(digest):
            self.fetch(digest)
        super().materialize(digest, dest)

    def fetch(self, digest: str) -> None:
        """Bring one object (a file or folder) from the remote, re-hashed; a one-line error if it cannot be."""
        tally = Tally()
        fetch_objects(self, self.remote, {digest}, NoMeter(), tally)
        if tally.problems or not self.object_intact(digest):
            raise StoreError(
                tally.problems[0]
                if tally.problems
                else f"object {digest} is neither in {self.root} nor on {self.remote.shown}"
            )


def _redacted(text: str, remote: Remote) -> str:
    return text.replace(remote.url, remote.shown).splitlines()[0] if text else ""
