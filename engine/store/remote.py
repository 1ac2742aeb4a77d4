"""A remote for the artifact store: a bucket (S3 and S3-compatible stores, GCS, Azure) or a folder other
machines mount, reached through fsspec. It holds what the local store holds, under the same names:

  objects/ab/cdef...        a file, named by the sha256 of its bytes
  trees/ab/<digest>.json    a folder object: its manifest {relative path: file digest}; the files are objects
  runs/ab/<key>.json        a run record, uploaded only after every object it names

Nothing is trusted for being there: every object is re-hashed as it is downloaded, and a record passes the
same checks as a local one (engine.store.records) before anything it names is fetched. An object store's
PUT is atomic (a reader sees the whole object or none; an interrupted multipart upload is invisible), so
objects go straight to their names; on a plain folder each file is written under tmp/ and renamed.
Credentials come only from the library's own chain (environment, profile files, instance roles): a URL that
holds any is refused (refuse_credentials)."""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.errors import OrtflowError, StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.secrets import redact, url_secrets
from ortflow.engine.store.atomic import remove_stale_staging, staging_path
from ortflow.engine.store.hashing import hash_file
from ortflow.engine.store.records import Origin
from ortflow.engine.store.remote_folder import make_folders, refusal, written
from ortflow.engine.store.remote_timeouts import with_timeouts

INSTALL = {
    "s3": 's3fs: pip install "ortflow[s3]"',
    "gs": 'gcsfs: pip install "ortflow[gcs]"',
    "gcs": 'gcsfs: pip install "ortflow[gcs]"',
    "az": 'adlfs: pip install "ortflow[azure]"',
    "abfs": 'adlfs: pip install "ortflow[azure]"',
}
Progress = Callable[[int], None]  # called with the bytes just transferred
CHAIN = (
    "use the library's standard chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE and "
    "~/.aws/credentials (S3), gcloud auth (GCS), azure-identity (Azure)"
)
STREAMS = 10  # downloads at once (s3fs's own batch size for get is 10 per call too)
CHUNK = 1 << 20


@dataclass
class Listing:
    """What the remote holds, from one listing: objects (digest -> bytes), folder objects and run keys."""

    objects: dict[str, int] = field(default_factory=dict)
    trees: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)

    def holds(self, digest: str) -> bool:
        return digest in self.objects or digest in self.trees


class Remote:
    """One remote, opened from its URL (s3://bucket/prefix, gs://..., az://..., file:///mnt/share/cache)."""

    def __init__(
        self, url: str, options: Mapping[str, Json] | None = None, allow_unsigned: bool = False
    ):
        self.url = url
        self.options = dict(options or {})  # for a Dask worker to open the same remote
        self.allow_unsigned = (
            allow_unsigned  # the user's opt-in to unsigned records (engine.store.remote_trust)
        )
        self.shown = redact(url)
        refuse_credentials(url)
        fs, root, self.atomic_put = _filesystem(url, dict(options or {}))
        self.fs, self.root = fs, root.rstrip("/")

    def failure(self, exc: BaseException) -> str:
        """A one-line error for a transfer that failed, without the URL's secrets."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (
            f"remote {self.shown}: {type(exc).__name__}: {_clean(text, self.url)} — check the URL, the bucket, the "
            "endpoint (AWS_ENDPOINT_URL_S3 for an S3-compatible store) and the credentials"
        )

    @property
    def origin(self) -> Origin:
        """The rule its records are checked under: signed, unless the user accepted unsigned ones."""
        return Origin.REMOTE_UNSIGNED_OK if self.allow_unsigned else Origin.REMOTE

    # -- names -------------------------------------------------------------------------------

    def object_name(self, digest: str) -> str:
        return f"{self.root}/objects/{digest[:2]}/{digest[2:]}"

    def tree_name(self, digest: str) -> str:
        return f"{self.root}/trees/{digest[:2]}/{digest}.json"

    def run_name(self, key: str) -> str:
        return f"{self.root}/runs/{key[:2]}/{key}.json"

    # -- reading -----------------------------------------------------------------------------

    def listing(self) -> Listing:
        """Everything the remote holds, in one listing (a few requests per thousand entries)."""
        self.fs.invalidate_cache()  # another machine may have pushed since this process last looked
        found = Listing()
        try:
            names = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            names = {}
        if not names:
            self._check_bucket()
        prefix = len(self.root) + 1
        for name, info in names.items():
            parts = name[prefix:].split("/")
            if len(parts) != 3:
                continue  # tmp/ on a folder remote, or something not ours
            kind, shard, leaf = parts
            if kind == "objects" and _is_digest(shard + leaf):
                found.objects[shard + leaf] = int(info.get("size") or 0)
            elif kind == "trees" and leaf.endswith(".json") and _is_digest(leaf[:-5]):
                found.trees.add(leaf[:-5])
            elif kind == "runs" and leaf.endswith(".json") and _is_digest(leaf[:-5]):
                found.runs.add(leaf[:-5])
        return found

    def _check_bucket(self) -> None:
        """An empty listing of an object store whose bucket does not exist is a wrong URL, not an empty remote."""
        if not self.atomic_put:
            return
        bucket = self.root.split("/", 1)[0]
        if bucket and not self.fs.exists(bucket):
            raise StoreError(
                f"remote {self.shown}: the bucket '{bucket}' does not exist — fix the bucket name in the URL "
                "(--remote, $ORTFLOW_REMOTE or ortflow.yaml), or create the bucket"
            )

    def size(self, name: str) -> int | None:
        """The size of one remote file, None when it is not there."""
        try:
            return int(self.fs.info(name).get("size") or 0)
        except FileNotFoundError:
            return None

    def refusal(self, name: str) -> str | None:
        """On a folder remote, why `name` must not be read (a FIFO, a device, a link out of the folder); asked
        before every read, which such a file would block or never end. An object store holds only objects."""
        return None if self.atomic_put else refusal(self.root, name)

    def read_json(self, name: str) -> Json:
        """A record or manifest; None when it is not there or is not JSON. Raises Unreadable for a name
        that is not a regular file (engine.store.remote_folder)."""
        problem = self.refusal(name)
        if problem:
            raise Unreadable(problem)
        try:
            found: Json = json.loads(self.fs.cat_file(name))  # unchecked: its reader checks it
        except FileNotFoundError:
            return None
        except (ValueError, UnicodeDecodeError):
            return None
        return found

    def read_many(self, names: list[str]) -> dict[str, Json]:
        """read_json() of several names in one concurrent batch (a thousand-stage recipe is not a thousand
        round trips in a row)."""
        if not names:
            return {}
        found = self.fs.cat(list(names), on_error="return")
        found = found if isinstance(found, dict) else {names[0]: found}
        values: dict[str, Json] = {}
        for name in names:
            data = found.get(name, found.get(self.fs._strip_protocol(name)))
            try:
                values[name] = json.loads(data) if isinstance(data, bytes) else None
            except (ValueError, UnicodeDecodeError):
                values[name] = None
        return values

    def write_many(self, values: Mapping[str, RunDocument]) -> None:
        """write_json() of several run records; on an object store in one concurrent batch."""
        if not self.atomic_put:
            for name, value in values.items():
                self.write_json(name, value)
        elif values:
            self.fs.pipe(
                {
                    name: json.dumps(v, indent=2, sort_keys=True).encode("utf-8")
                    for name, v in values.items()
                }
            )

    def hash_of(self, name: str) -> str:
        """The sha256 of a remote file, streamed (nothing is kept)."""
        import hashlib

        problem = self.refusal(name)
        if problem:
            raise Unreadable(problem)
        digest = hashlib.sha256()
        with self.fs.open(name, "rb", block_size=8 << 20) as handle:
            while chunk := handle.read(8 << 20):
                digest.update(chunk)
        return digest.hexdigest()

    def download(self, pairs: list[tuple[str, Path]], progress: Progress) -> dict[Path, str]:
        """Remote names to local files, several at once, each hashed (sha256) from the bytes as they arrive;
        returns {local path: digest}. `progress` hears of the bytes."""
        if not pairs:
            return {}
        if getattr(self.fs, "async_impl", False) and hasattr(self.fs, "open_async"):
            from fsspec.asyn import sync

            digests: dict[Path, str] = sync(self.fs.loop, self._streamed, pairs, progress)
            return digests
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rehash") as hashing:
            hashed: dict[
                Path, Future[str]
            ] = {}  # each file hashed as soon as it lands, while others arrive

            def landed(path: Path) -> None:
                hashed.setdefault(path, hashing.submit(hash_file, path))

            self.fs.get(
                [r for r, _ in pairs],
                [str(p) for _, p in pairs],
                callback=_byte_counter(progress, landed),
            )
            return {
                path: hashed[path].result() if path in hashed else hash_file(path)
                for _, path in pairs
            }

    async def _streamed(self, pairs: list[tuple[str, Path]], progress: Progress) -> dict[Path, str]:
        """Concurrent streamed GETs, each hashed and written chunk by chunk (no second read of the file)."""
        import asyncio
        import hashlib

        slots = asyncio.Semaphore(STREAMS)

        async def one(name: str, path: Path) -> str:
            async with slots:
                digest = hashlib.sha256()
                source = await self.fs.open_async(name, "rb")
                with open(path, "wb") as sink:
                    while chunk := await source.read(CHUNK):
                        digest.update(chunk)
                        sink.write(chunk)
                        progress(len(chunk))
                return digest.hexdigest()

        digests = await asyncio.gather(*(one(name, path) for name, path in pairs))
        return {path: digest for (_, path), digest in zip(pairs, digests, strict=True)}

    # -- writing -----------------------------------------------------------------------------

    def upload(self, pairs: list[tuple[Path, str]], progress: Progress) -> None:
        """Local files to remote names, several at once. On a folder each lands under a temporary name first."""
        if not pairs:
            return
        if self.atomic_put:
            self.fs.put(
                [str(p) for p, _ in pairs], [r for _, r in pairs], callback=_byte_counter(progress)
            )
            return
        for path, name in pairs:
            staging = self._staging()
            counter = _byte_counter(progress).branched(str(path), staging)
            written(staging, lambda: self.fs.put_file(str(path), staging, callback=counter))  # noqa: B023
            self._commit(staging, name)

    def write_json(self, name: str, value: Any) -> None:
        data = json.dumps(value, indent=2, sort_keys=True).encode("utf-8")
        if self.atomic_put:
            self.fs.pipe_file(name, data)
            return
        staging = self._staging()
        written(staging, lambda: self.fs.pipe_file(staging, data))
        self._commit(staging, name)

    def remove(self, name: str) -> None:
        self.fs.rm_file(name)

    def _staging(self) -> str:
        # named after this host and process (engine.store.atomic): a killed push's file goes with the next push
        return str(staging_path(Path(self.root) / "tmp" / uuid.uuid4().hex[:16]))

    def _commit(self, staging: str, name: str) -> None:
        make_folders(Path(name).parent)  # the store's modes, whatever the umask
        self.fs.mv(staging, name)  # a rename on a local or mounted folder: all or nothing


class Unreadable(StoreError):
    """A name on a folder remote that is not a regular file inside it: refused before anything reads it."""


def _filesystem(url: str, options: Mapping[str, Json]) -> tuple[Any, str, bool]:
    """(fsspec filesystem, root path inside it, whether a put is atomic by itself)."""
    try:
        import fsspec
    except ImportError:
        raise StoreError(
            f'remotes need fsspec: pip install "ortflow[s3]" (remote {redact(url)})'
        ) from None
    protocol = urllib.parse.urlsplit(url).scheme or "file"
    try:
        fs, root = fsspec.core.url_to_fs(url, **with_timeouts(protocol, options))
    except ImportError:
        need = INSTALL.get(protocol, f"the fsspec implementation of {protocol}://")
        raise StoreError(f"remote {redact(url)} needs {need}") from None
    except ValueError as exc:
        raise StoreError(
            f"remote {redact(url)}: {_clean(str(exc), url)} — give a URL such as s3://bucket/prefix "
            "or file:///mnt/share/ortflow"
        ) from None
    local = "file" in (fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,))
    if local:  # staging files of a killed push are removed once they are older than any write takes
        make_folders(Path(root) / "tmp")
        remove_stale_staging(Path(root) / "tmp")
    return fs, root, not local


def refuse_credentials(url: str) -> None:
    """A URL that carries credentials is refused before anything is opened, rather than parsed for the
    filesystem. Refusing is the safer choice: a URL is echoed by shells, `ps`, CI logs and Dask's task graph,
    and a secret holding '/', '@' or '#' has no one reading that every tool agrees on, so a parser that guesses
    wrong sends the secret to the server as part of the bucket or path, where it comes back in an error."""
    found = url_secrets(url)
    if found:
        raise StoreError(
            f"remote {redact(url)}: the URL holds {found.said()}; credentials do not belong in a URL (shells, "
            f"process lists and logs keep it) — {CHAIN} (an '@' that belongs to the path: choose a prefix without it)"
        )


def _clean(text: str, url: str) -> str:
    return redact(text.replace(url, redact(url)))


def _is_digest(text: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{64}", text) is not None


def _byte_counter(progress: Progress, landed: Callable[[Path], None] = lambda _p: None) -> Any:
    from fsspec.callbacks import Callback

    class Child(Callback):  # type: ignore[misc]  # fsspec ships no type information
        value: int  # fsspec's Callback sets it in __init__, unannotated

        def __init__(self, destination: str = ""):
            super().__init__()
            self.destination = destination

        def close(
            self,
        ) -> None:  # fsspec closes a file's callback once the file is written and closed
            if self.destination:
                landed(Path(self.destination))

        def relative_update(self, inc: int = 1) -> None:
            progress(inc)

        def absolute_update(self, value: int) -> None:
            if value > self.value:
                progress(value - self.value)
            self.value = value

    class Parent(Callback):  # type: ignore[misc]  # fsspec ships no type information
        """Counts bytes from every file of a batch (fsspec hands each transfer a child callback)."""

        def branched(self, path_1: str, path_2: str, **kwargs: Any) -> Callback:
            return Child(path_2)

        def relative_update(self, inc: int = 1) -> None:
            pass  # the parent counts files; bytes come from the children

    return Parent()


def remote_call(remote: Remote, call: Callable[[], Any]) -> Any:
    """`call()` on a remote, with what its backend raises said as one line (engine.leaves.errors' boundary)."""
    try:
        return call()
    except OrtflowError:
        raise
    except Exception as exc:  # noqa: BLE001 - boundary: remote store; fsspec backends raise their own types
        raise OrtflowError(remote.failure(exc)) from None
