"""Runs one stage: cache look-up under a per-key lock, execution in a private work folder, atomic commit."""

from __future__ import annotations

import shutil
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.environment import facts
from engine.errors import GateFailed, StageError
from engine.keys import stage_key
from engine.recipe import StageSpec
from engine.stage import StageContext, StageResult
from engine.store import ArtifactStore

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
        env = facts(tuple(stage.env_facts(self.spec.params)))
        key = stage_key(self.spec.uses, self.spec.stage_cls.version, self.spec.params, self.input_digests, env)
        return key, env


def cached_outcome(store: ArtifactStore, job: StageJob) -> StageOutcome | None:
    key, _ = job.key_and_env()
    record = store.read_run(key)
    return StageOutcome(job.spec.name, CACHED, 0.0, key, record) if record else None


def execute(store: ArtifactStore, job: StageJob, log: Callable[[str], None] = lambda _m: None) -> StageOutcome:
    spec = job.spec
    started = time.perf_counter()
    key, env = job.key_and_env()
    try:
        with store.key_lock(key):
            record = store.read_run(key)  # another process may have built it while we waited
            if record is not None:
                return StageOutcome(spec.name, CACHED, time.perf_counter() - started, key, record)
            record = _build(store, job, key, env, log)
        return StageOutcome(spec.name, RAN, time.perf_counter() - started, key, record)
    except GateFailed as exc:
        return StageOutcome(spec.name, GATE_FAILED, time.perf_counter() - started, key, error=str(exc))
    except StageError as exc:
        return StageOutcome(spec.name, FAILED, time.perf_counter() - started, key, error=str(exc))
    except Exception as exc:  # a bug or a library error: keep the traceback for --debug
        message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        return StageOutcome(spec.name, FAILED, time.perf_counter() - started, key, error=message,
                            traceback=traceback.format_exc())


def _build(store: ArtifactStore, job: StageJob, key: str, env: dict[str, str], log: Callable[[str], None]) -> dict:
    spec = job.spec
    workdir = store.workdir(spec.name)
    try:
        out_dir = workdir / "out"
        out_dir.mkdir()
        ports = {p.name: p for p in spec.stage_cls.outputs}
        ctx = StageContext(spec.name, dict(spec.params), dict(job.input_paths), out_dir, ports, log)
        started = time.perf_counter()
        result = spec.stage_cls().run(ctx) or StageResult()
        seconds = time.perf_counter() - started
        outputs: dict[str, Any] = {}
        for name, port in sorted(ports.items()):
            path = ctx.output_path(name)
            if not path.exists():
                if port.optional:
                    continue
                raise StageError(f"stage type {spec.uses} did not write its output '{name}' ({path.name})"
                                 " — this is a bug in the stage")
            size = path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            outputs[name] = {"digest": store.add(path), "kind": port.kind.value, "filename": path.name, "size": size}
        record = {
            "key": key,
            "stage": spec.name,
            "type": spec.uses,
            "version": spec.stage_cls.version,
            "params": spec.params,
            "inputs": job.input_digests,
            "env": env,
            "outputs": outputs,
            "summary": result.summary,
            "metrics": result.metrics,
            "seconds": round(seconds, 3),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        store.write_run(key, record)
        return record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
