"""Runs one stage: cache look-up under a per-key mutex, execution in a private work folder, atomic commit."""

from __future__ import annotations

import copy
import functools
import shutil
import socket
import time
import traceback
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

from ortflow.engine.contracts.builds import RunOutput, RunRecord
from ortflow.engine.contracts.dataset import Dataset
from ortflow.engine.contracts.json_values import json_value
from ortflow.engine.contracts.params import stage_params
from ortflow.engine.contracts.provenance import DataSource
from ortflow.engine.contracts.stage import StageContext, StageResult
from ortflow.engine.contracts.types import (
    StageJob,
    StageOutcome,
    Status,
)
from ortflow.engine.leaves.disk_space import CACHE_FIX, disk_full_message, mount_point
from ortflow.engine.leaves.errors import (
    LOW_SPACE,
    GateFailed,
    ProviderUnavailable,
    StageError,
    no_space,
)
from ortflow.engine.leaves.json_types import Json, obj
from ortflow.engine.run.capture import captured_output
from ortflow.engine.run.jobs import served, settled
from ortflow.engine.run.steps import StepRunner
from ortflow.engine.store.base import Store
from ortflow.engine.store.digests import content_digest, input_digest
from ortflow.engine.store.files import tree_size

LOG_TAIL = 4000  # characters of a stage's printed output kept in its run record


@dataclass
class FailureContext:
    """What a stage left when its code raised, kept here rather than patched onto the exception: the tail of what
    it printed (the outcome's log), its work folder (paths into it are taken out of the message: the folder is gone
    by the time anyone reads it) and the space left on its disk then (a full disk is said as the cause)."""

    printed: str = ""
    workdir: Path | None = None
    free_bytes: int | None = None


def execute(
    store: Store,
    job: StageJob,
    log: Callable[[str], None] = lambda _m: None,
    ran_on: dict[str, str] | None = None,
) -> StageOutcome:
    """`ran_on`: the machine's identity for the run record (by default its host name; a Dask worker adds its own)."""
    spec = job.spec
    started = time.perf_counter()
    key = job.identity.key
    context = FailureContext()  # filled by _run_stage when the stage's code raises
    try:
        with store.key_mutex(key):
            record = store.read_run(key, spec.name)  # another process may have built it meanwhile
            if record is not None and served(record, spec):
                return settled(spec.name, Status.CACHED, time.perf_counter() - started, key, record)
            record = _build(store, job, log, ran_on or {"host": socket.gethostname()}, context)
        return settled(spec.name, Status.RAN, time.perf_counter() - started, key, record)
    except ProviderUnavailable as exc:
        status = Status.SKIPPED if spec.optional else Status.FAILED
        message = f"optional stage skipped: {exc}" if spec.optional else str(exc)
        return StageOutcome(
            spec.name,
            status,
            time.perf_counter() - started,
            key,
            error=message,
            unavailable=spec.optional,
        )
    except (
        StageError
    ) as exc:  # the stage's own one-line verdict; a library error it wraps keeps its traceback
        details = traceback.format_exc() if exc.__cause__ is not None else None
        failed = _failure(
            store,
            spec.name,
            time.perf_counter() - started,
            key,
            exc,
            _readable(str(exc), context),
            details,
            context,
        )
        return _refused(store, job, failed, ran_on)
    except Exception as exc:  # noqa: BLE001 - boundary: stage code. Keep the traceback (and what it printed) for --debug
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message = _readable(f"{type(exc).__name__}: {first}", context)
        return _failure(
            store,
            spec.name,
            time.perf_counter() - started,
            key,
            exc,
            message,
            traceback.format_exc(),
            context,
        )


def _refused(
    store: Store, job: StageJob, failed: StageOutcome, ran_on: dict[str, str] | None
) -> StageOutcome:
    """A StageError's outcome: the stage's own verdict (refused), unless the disk was full (the machine's).
    An optional stage's refusal is cached under its key, so the same inputs are not rebuilt to be refused
    again (a required stage's is not: it fails the run, and the user may fix what it named)."""
    if failed.out_of_space:
        return failed
    if job.spec.optional:
        _record_refusal(store, job, failed, ran_on or {"host": socket.gethostname()})
    return replace(failed, refused=True)


def _record_refusal(
    store: Store, job: StageJob, failed: StageOutcome, ran_on: dict[str, str]
) -> None:
    """A run record with no outputs and the optional stage's verdict, under its key."""
    identity = job.identity
    record = RunRecord(
        identity.key,
        job.spec.name,
        job.spec.uses,
        identity.version,
        identity.params,
        identity.inputs,
        identity.env,
        {},
        ran_on,
        summary=failed.error or "",
        seconds=round(failed.seconds, 3),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        refused=failed.error or "refused",
    )
    store.write_run(record)


def _failure(
    store: Store,
    name: str,
    seconds: float,
    key: str,
    exc: BaseException,
    message: str,
    details: str | None,
    context: FailureContext,
) -> StageOutcome:
    """A failed stage's outcome. A full disk is said as such, whether the error says it (ENOSPC) or only shows
    its effect (a truncated model that no longer parses), judged by the space left when the stage failed."""
    free = context.free_bytes
    full_error = no_space(exc)
    if full_error is not None:
        message, full = _full_disk(store.root, full_error), True
    elif free is not None and free < LOW_SPACE:
        message, full = (
            (
                f"{message} — the disk holding the cache ({store.root}; the file system mounted at "
                f"{mount_point(store.root)}) had {free / 1e6:.1f} MB free when the stage failed, the likely "
                "cause: free space there and run again"
            ),
            True,
        )
    else:
        full = False
    return StageOutcome(
        name,
        Status.FAILED,
        seconds,
        key,
        error=message,
        traceback=details,
        printed=context.printed,
        out_of_space=full,
    )


def _full_disk(cache: Path, error: OSError) -> str:
    """The disk that filled: the cache's, unless the error names a file written elsewhere (a temporary folder
    a library chose). A copy's error names its source first and its destination second."""
    written = error.filename2 or error.filename
    if written and not Path(written).resolve().is_relative_to(cache):
        return disk_full_message(
            "a file the stage wrote", Path(written), "free space there and run again"
        )
    return disk_full_message("the cache", cache, CACHE_FIX)


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _readable(message: str, context: FailureContext) -> str:
    """A message without paths into the stage's work folder, which is gone by the time anyone reads it:
    files the stage made there are named by their own names."""
    workdir = context.workdir
    if workdir is None:
        return message
    for folder in (workdir / "scratch", workdir / "out"):
        message = message.replace(f"{folder}/", "")
    return message.replace(str(workdir), "(the stage's work folder)")


def _build(
    store: Store,
    job: StageJob,
    log: Callable[[str], None],
    ran_on: dict[str, str],
    context: FailureContext,
) -> RunRecord:
    spec, identity = job.spec, job.identity
    with store.workdir(spec.name) as workdir:
        ctx, steps = _context(store, job, workdir, log)
        ran = _run_stage(job, ctx, workdir, context)
        _check_sources_unchanged(store, job)
        outputs = _store_outputs(store, job, ctx, ran.result)
        record = RunRecord(
            identity.key,
            spec.name,
            spec.uses,
            identity.version,
            identity.params,
            identity.inputs,
            identity.env,
            outputs,
            ran_on,
            ran.result.summary,
            ran.result.metrics,
            _recorded(ran.result.data_source),
            round(ran.seconds, 3),
            ran.printed,
            ran.gate_failed,
            tuple(sorted(set(steps.keys))),
            datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        store.write_run(record)
        return record


def _recorded(source: DataSource | None) -> Mapping[str, Json] | None:
    """The data a verdict rests on as the run record keeps it: its DataSourceJson as plain JSON (the record's
    field also holds what older versions wrote, which DataSource.from_json reads back)."""
    return obj(json_value(source.to_json())) if source is not None else None


def _context(
    store: Store, job: StageJob, workdir: Path, log: Callable[[str], None]
) -> tuple[StageContext, StepRunner]:
    """What the stage's code is given: its own copy of the parameters, its inputs, empty out/ and scratch/
    folders in the work folder, and a runner for its sub-stages (whose keys the run record lists)."""
    spec, identity = job.spec, job.identity
    out_dir, scratch = workdir / "out", workdir / "scratch"
    out_dir.mkdir()
    scratch.mkdir()
    ports = {p.name: p for p in spec.stage_cls.outputs}
    references = {port: b.shaped([str(r) for r in b.refs]) for port, b in spec.inputs.items()}
    steps = StepRunner(store, spec.name, functools.partial(execute, store), log)
    for port, datasets in job.upstream_data.items():
        digests = job.input_digests.get(port)
        for digest in digests if isinstance(digests, list) else [digests]:
            steps.upstream[str(digest)] = datasets
    ctx = StageContext(
        spec.name,
        stage_params(spec.stage_cls.type, copy.deepcopy(spec.params)),
        dict(job.input_paths),
        out_dir,
        ports,
        scratch,
        log,
        references,
        dict(job.input_digests),
        steps,
        dict(identity.env),
        _pinned(job),
        made_from=dict(job.made_from),
        calibrated_on=dict(job.calibrated_on),
        upstream_data=dict(job.upstream_data),
    )
    return ctx, steps


@dataclass(frozen=True)
class _Ran:
    """What running the stage's code gave: its result, the verdict of a gate that refused its output, how
    long it took, and the tail of what it printed."""

    result: StageResult
    gate_failed: str | None
    seconds: float
    printed: str


def _run_stage(job: StageJob, ctx: StageContext, workdir: Path, context: FailureContext) -> _Ran:
    """Run the stage's code, its printed output captured. An error leaves `context` holding what the stage
    printed, its work folder (to take out of messages) and the space left there (to tell a full disk)."""
    started = time.perf_counter()
    with captured_output() as printed:  # library chatter goes to the run record, not the terminal
        gate_failed = None
        try:
            result = job.spec.stage_cls().run(ctx) or StageResult()
        except (
            GateFailed
        ) as exc:  # the stage ran and measured: keep what it wrote, with the verdict
            result, gate_failed = (
                StageResult(summary=str(exc), metrics=exc.metrics, data_source=exc.data_source),
                str(exc),
            )
        except BaseException:
            context.printed = printed.getvalue()[-LOG_TAIL:]
            context.workdir = workdir  # removed before the error is shown
            context.free_bytes = _free_bytes(workdir)  # before removing it frees space
            raise
    seconds = time.perf_counter() - started
    return _Ran(result, gate_failed, seconds, printed.getvalue()[-LOG_TAIL:])


def _store_outputs(
    store: Store, job: StageJob, ctx: StageContext, result: StageResult
) -> dict[str, RunOutput]:
    """Each output the stage wrote, added to the store (with the float values it reported for it); a
    required output it did not write is a bug in the stage."""
    outputs: dict[str, RunOutput] = {}
    for name, port in sorted({p.name: p for p in job.spec.stage_cls.outputs}.items()):
        path = ctx.output_path(name)
        if not path.exists():
            if port.optional:
                continue
            raise StageError(
                f"stage type {job.spec.uses} did not write its output '{name}' ({path.name})"
                " — this is a bug in the stage"
            )
        values = tuple(map(float, result.values[name])) if name in result.values else None
        size = tree_size(path)  # before store.add, which moves the output into the store
        outputs[name] = RunOutput(store.add(path), port.kind.value, path.name, size, values)
    return outputs


def _pinned(job: StageJob) -> dict[str, tuple[float, ...]]:
    """The lock's recorded values for this job's outputs (a value the lock garbles was dropped as it was
    read: engine.contracts.builds.floats_of)."""
    return dict(job.pinned_values)


def _check_sources_unchanged(store: Store, job: StageJob) -> None:
    """The key was computed from the inputs' hashes before the stage read them; if a file changed in
    between, the result belongs to neither version and must not be stored under the old key."""
    for port, value in job.input_paths.items():
        values = value if isinstance(value, list) else [value]
        digests = job.input_digests[port]
        for item, digest in zip(
            values, digests if isinstance(digests, list) else [digests], strict=False
        ):
            if isinstance(item, Dataset):
                current = content_digest(type(item.loader), item.params, store.hashes)
            elif store.holds(Path(item)):
                continue  # store objects are immutable
            else:
                current = input_digest(Path(item), store.hashes)
            if current != digest:
                raise StageError(
                    f"input '{port}' ({item}) changed while the stage ran, so its result was not kept"
                    " — run again once the file stops changing"
                )
