"""Runs one stage: cache look-up under a per-key lock, execution in a private work folder, atomic commit."""

from __future__ import annotations

import copy
import socket
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.capture import captured_output
from engine.dataset import Dataset
from engine.environment import facts
from engine.providers import ProviderUnavailable
from engine.errors import GateFailed, StageError
from engine.keys import stage_key
from engine.recipe import Ref, StageSpec
from engine.sources import input_digest
from engine.stage import StageContext, StageResult
from engine.steps import StepRunner
from engine.store import ArtifactStore, tree_size

LOG_TAIL = 4000  # characters of a stage's printed output kept in its run record
RAN, CACHED, FAILED, GATE_FAILED, SKIPPED, NOT_RUN = "ran", "cached", "failed", "gate failed", "skipped", "not run"


@dataclass
class StageOutcome:
    name: str
    status: str
    seconds: float = 0.0
    key: str | None = None
    record: dict[str, Any] | None = None
    error: str | None = None
    traceback: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.status in (RAN, CACHED)


@dataclass(frozen=True)
class StageJob:
    """Everything needed to run a stage, with inputs already resolved to digests and paths."""

    spec: StageSpec
    input_digests: dict[str, str | list[str]]
    input_paths: dict[str, Any]  # Path, list of Paths, or Dataset

    def key_and_env(self) -> tuple[str, dict[str, str]]:
        stage = self.spec.stage_cls()
        try:
            env = facts(tuple(stage.env_facts(self.spec.params)))
        except KeyError as exc:
            raise StageError(f"stage type {self.spec.uses} declares {exc.args[0]} — fix the stage's env_facts") from None
        key = stage_key(self.spec.uses, self.spec.stage_cls.version, self.spec.params, self.input_digests, env)
        return key, env


def job_for(spec: StageSpec, locate: Callable[[Ref], tuple[str, Any] | None]) -> StageJob | Ref:
    """The stage's job, its inputs resolved by `locate` to (digest, path or Dataset); or the first reference
    that cannot be resolved (an optional output its upstream stage did not produce)."""
    digests: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for port, value in sorted(spec.inputs.items()):
        refs = value if isinstance(value, list) else [value]
        resolved = []
        for ref in refs:
            found = locate(ref)
            if found is None:
                return ref
            resolved.append(found)
        digests[port] = [d for d, _ in resolved] if isinstance(value, list) else resolved[0][0]
        values[port] = [v for _, v in resolved] if isinstance(value, list) else resolved[0][1]
    return StageJob(spec, digests, values)


def _settled(name: str, status: str, seconds: float, key: str, record: dict[str, Any]) -> StageOutcome:
    """A gate's verdict is part of what is cached: the same inputs fail the same gate without re-running."""
    if record.get("gate_failed"):
        return StageOutcome(name, GATE_FAILED, seconds, key, record, error=record["gate_failed"])
    return StageOutcome(name, status, seconds, key, record)


def cached_outcome(store: ArtifactStore, job: StageJob) -> StageOutcome | None:
    key, _ = job.key_and_env()
    record = store.read_run(key)
    return _settled(job.spec.name, CACHED, 0.0, key, record) if record else None


def execute(store: ArtifactStore, job: StageJob, log: Callable[[str], None] = lambda _m: None,
            ran_on: dict[str, str] | None = None) -> StageOutcome:
    """`ran_on`: the machine's identity for the run record (by default its host name; a Dask worker adds its own)."""
    spec = job.spec
    started = time.perf_counter()
    key, env = job.key_and_env()
    try:
        with store.key_lock(key):
            record = store.read_run(key)  # another process may have built it while we waited
            if record is not None:
                return _settled(spec.name, CACHED, time.perf_counter() - started, key, record)
            record = _build(store, job, key, env, log, ran_on or {"host": socket.gethostname()})
        return _settled(spec.name, RAN, time.perf_counter() - started, key, record)
    except ProviderUnavailable as exc:
        status = SKIPPED if spec.optional else FAILED
        message = f"optional stage skipped: {exc}" if spec.optional else str(exc)
        return StageOutcome(spec.name, status, time.perf_counter() - started, key, error=message)
    except StageError as exc:
        return StageOutcome(spec.name, FAILED, time.perf_counter() - started, key, error=str(exc))
    except Exception as exc:  # a bug or a library error: keep the traceback (and what it printed) for --debug
        message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        log = getattr(exc, "stage_log", "")
        details = traceback.format_exc() + (f"\nthe stage printed:\n{log}" if log else "")
        return StageOutcome(spec.name, FAILED, time.perf_counter() - started, key, error=message, traceback=details)


def _build(store: ArtifactStore, job: StageJob, key: str, env: dict[str, str], log: Callable[[str], None],
           ran_on: dict[str, str]) -> dict:
    spec = job.spec
    with store.workdir(spec.name) as workdir:
        out_dir = workdir / "out"
        out_dir.mkdir()
        ports = {p.name: p for p in spec.stage_cls.outputs}
        references = {port: [str(r) for r in v] if isinstance(v, list) else str(v) for port, v in spec.inputs.items()}
        steps = StepRunner(store, spec.name, log)
        ctx = StageContext(spec.name, copy.deepcopy(spec.params), dict(job.input_paths), out_dir, ports, log, references,
                           dict(job.input_digests), steps)
        started = time.perf_counter()
        with captured_output() as printed:  # library chatter goes to the run record, not the terminal
            gate_failed = None
            try:
                result = spec.stage_cls().run(ctx) or StageResult()
            except GateFailed as exc:  # the stage ran and measured: keep what it wrote, with the verdict
                result, gate_failed = StageResult(summary=str(exc), metrics=exc.metrics), str(exc)
            except BaseException as exc:
                exc.stage_log = printed.getvalue()[-LOG_TAIL:]  # type: ignore[attr-defined]
                raise
        seconds = time.perf_counter() - started
        _check_sources_unchanged(store, job)
        outputs: dict[str, Any] = {}
        for name, port in sorted(ports.items()):
            path = ctx.output_path(name)
            if not path.exists():
                if port.optional:
                    continue
                raise StageError(f"stage type {spec.uses} did not write its output '{name}' ({path.name})"
                                 " — this is a bug in the stage")
            size = tree_size(path)
            outputs[name] = {"digest": store.add(path), "kind": port.kind.value, "filename": path.name, "size": size}
        record = {
            "key": key,
            "stage": spec.name,
            "type": spec.uses,
            "version": spec.stage_cls.version,
            "params": spec.params,
            "inputs": job.input_digests,
            "env": env,
            "ran_on": ran_on,  # where it was measured or built; not part of the key
            "outputs": outputs,
            "summary": result.summary,
            "metrics": result.metrics,
            "seconds": round(seconds, 3),
            "log": printed.getvalue()[-LOG_TAIL:],
            "gate_failed": gate_failed,
            "steps": sorted(set(steps.keys)),  # sub-stage runs this one used: gc keeps them with it
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        store.write_run(key, record)
        return record


def _check_sources_unchanged(store: ArtifactStore, job: StageJob) -> None:
    """The key was computed from the inputs' hashes before the stage read them; if a file changed in
    between, the result belongs to neither version and must not be stored under the old key."""
    for port, value in job.input_paths.items():
        values = value if isinstance(value, list) else [value]
        digests = job.input_digests[port]
        for item, digest in zip(values, digests if isinstance(digests, list) else [digests], strict=False):
            if isinstance(item, Dataset):
                current = item.current_digest(store.hashes)
            elif store.objects in Path(item).parents:
                continue  # store objects are immutable
            else:
                current = input_digest(Path(item), store.hashes)
            if current != digest:
                raise StageError(f"input '{port}' ({item}) changed while the stage ran, so its result was not kept"
                                 " — run again once the file stops changing")
