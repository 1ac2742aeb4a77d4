"""Push and pull through a remote, side by side with fsspec's own raw upload and download of the same files,
against a real S3 server on this machine (moto's standalone server on 127.0.0.1).

The recipe (default: the quickstart; `--recipe recipes/minilm-cpu-int8.yaml` builds that one, which takes
several minutes) is built once in a temporary folder. Then, in rounds that alternate the order:
- raw put: `fs.put(files, names)` of the objects the lock file references, in one batch (what s3fs does
  at its best); `cache push` (engine.store.transfer.push) of the same recipe to a fresh prefix;
- raw get: `fs.get(names, files)` into an empty folder; `cache pull` into an empty cache (every object
  re-hashed before it enters the store);
- the no-op second push and pull, as a user runs them: `engine cache push|pull` in a new process each,
  against `python -c "import fsspec, s3fs"` (the start-up floor).
Medians are printed with the throughput ratio ortflow/raw (goal: >= 0.8) and the no-op times (goal: < 1 s).

Usage: python bench/remote_cache.py [--recipe PATH] [--rounds N] [--quick]
(--quick: one round of bench/quick.py's tiny recipe)
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import quick

ROOT = Path(__file__).resolve().parent.parent


def start_server() -> str:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench-secret",
        AWS_ENDPOINT_URL_S3=endpoint,
        AWS_DEFAULT_REGION="us-east-1",
    )
    return endpoint


def compile_bytecode() -> None:
    """As bench/engine_overhead.py: under PYTHONDONTWRITEBYTECODE=1 (set on these machines) an editable install
    would recompile every module in every new process, which users of an installed package never pay."""
    import ortflow
    import ortflow.engine
    import ortflow.stages

    folders = {str(Path(m.__file__).parent) for m in (ortflow, ortflow.engine, ortflow.stages)}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *sorted(folders)],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )


def build(recipe: Path, work: Path) -> Path:
    copy = work / recipe.name
    shutil.copy(recipe, copy)
    if (recipe.parent / "data").is_dir():
        shutil.copytree(recipe.parent / "data", work / "data")
    subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "run", str(copy)],
        cwd=work,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return copy


def lock_keys(recipe: Path, store) -> dict[str, str]:
    """{cache key: stage} of what `engine cache push RECIPE` sends: the lock's keys, and this machine's records of
    its host-specific entries (a benchmark, an accuracy check), which the lock records without a key. Read by the
    CLI's own function, so this bench moves what push moves (reading the lock here broke when that changed)."""
    from ortflow.engine.cli.cache_scope import lock_keys as recipe_lock_keys

    keys, _host_specific = recipe_lock_keys([recipe], store)
    return keys


def object_files(store, keys: dict[str, str]) -> list[Path]:
    digests = {d for key in keys for d in store.read_run(key).digests.values()}
    return [store.object_path(d) for d in sorted(digests)]


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def one_round(
    recipe: Path,
    store,
    keys: dict[str, str],
    files: list[Path],
    bucket: str,
    work: Path,
    flip: bool,
) -> dict:
    from ortflow.engine.store.artifacts import ArtifactStore
    from ortflow.engine.store.remote import Remote
    from ortflow.engine.store.transfer import pull, push

    tag = uuid.uuid4().hex[:8]
    remote = Remote(f"s3://{bucket}/ortflow-{tag}")
    fs = remote.fs
    names = [f"{bucket}/raw-{tag}/{path.parent.name}{path.name}" for path in files]
    got = work / f"raw-{tag}"
    got.mkdir()
    fresh = work / f"cache-{tag}"
    steps = {
        "raw put": lambda: fs.put([str(p) for p in files], names),
        "push": lambda: push(store, remote, keys),
        "raw get": lambda: fs.get(names, [str(got / Path(n).name) for n in names]),
        "pull": lambda: pull(ArtifactStore(fresh), remote, keys),
    }
    seconds = {}
    for pair in (
        ("raw put", "push"),
        ("raw get", "pull"),
    ):  # pushes before pulls; which of a pair goes first alternates
        for name in pair[::-1] if flip else pair:
            fs.invalidate_cache()
            seconds[name] = timed(steps[name])
    seconds["no-op push, in process"] = timed(steps["push"])
    seconds["no-op pull, in process"] = timed(steps["pull"])
    cli = [sys.executable, "-m", "ortflow.engine.cli", "cache"]
    url = ["--remote", remote.url]
    seconds["no-op push"] = timed(
        lambda: subprocess.run(
            [*cli, "push", str(recipe), *url], check=True, stdout=subprocess.DEVNULL
        )
    )
    seconds["no-op pull"] = timed(
        lambda: subprocess.run(
            [*cli, "pull", str(recipe), "--cache", str(fresh), *url],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    )
    seconds["start-up floor"] = timed(
        lambda: subprocess.run(
            [sys.executable, "-c", "import fsspec, s3fs, ortflow.engine.cli"], check=True
        )
    )
    fs.rm(f"{bucket}/raw-{tag}", recursive=True)
    fs.rm(f"{bucket}/ortflow-{tag}", recursive=True)
    shutil.rmtree(got)
    shutil.rmtree(fresh, ignore_errors=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=ROOT / "recipes" / "quickstart.yaml")
    parser.add_argument("--rounds", type=int, default=3)
    quick.add_flag(parser)
    args = parser.parse_args()
    args.rounds = 1 if args.quick else args.rounds
    # records on a remote are signed (docs/security.md): the build, push and pull share one key
    os.environ.setdefault("ORTFLOW_SIGNING_KEY", secrets.token_hex(32))
    compile_bytecode()
    start_server()
    import boto3

    from ortflow.engine.store.artifacts import ArtifactStore

    bucket = "ortflow-bench"
    boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"]).create_bucket(Bucket=bucket)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = quick.tiny_recipe(work / "tiny") if args.quick else args.recipe.resolve()
        print(f"building {source.name} in a temporary folder ...", flush=True)
        recipe = build(source, work)
        store = ArtifactStore(work / ".ortflow")
        keys = lock_keys(recipe, store)
        files = object_files(store, keys)
        total = sum(f.stat().st_size for f in files)
        print(
            f"{len(keys)} stages, {len(files)} objects, {total / 1e6:.1f} MB; {args.rounds} rounds",
            flush=True,
        )
        rounds = [
            one_round(recipe, store, keys, files, bucket, work, flip=i % 2 == 1)
            for i in range(args.rounds)
        ]
    median = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    mbps = {name: total / 1e6 / median[name] for name in ("raw put", "push", "raw get", "pull")}
    print("\n| transfer | fsspec raw | ortflow | ortflow / raw |\n|---|---|---|---|")
    for raw, ours in (("raw put", "push"), ("raw get", "pull")):
        print(
            f"| {ours} ({total / 1e6:.0f} MB) | {mbps[raw]:.1f} MB/s ({median[raw]:.2f} s) | "
            f"{mbps[ours]:.1f} MB/s ({median[ours]:.2f} s) | {mbps[ours] / mbps[raw]:.2f}x |"
        )
    print(
        f"\nno-op second push: {median['no-op push']:.2f} s, no-op second pull: {median['no-op pull']:.2f} s "
        f"(new processes; start-up floor `import fsspec, s3fs, ortflow.engine.cli`: {median['start-up floor']:.2f} s); "
        f"in process: push {median['no-op push, in process']:.2f} s, pull {median['no-op pull, in process']:.2f} s"
    )


if __name__ == "__main__":
    main()
