"""Steps: a composite stage (a search, say) runs other registered stage types as sub-stages, each looked up
and stored in the cache under exactly the key rules of a recipe stage (type, version, parameters with
defaults, input digests, environment facts). A crashed or re-targeted search therefore reuses every
candidate it already built, timed or checked; and `cache gc` keeps a step as long as its parent is kept."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.errors import StageError


@dataclass(frozen=True)
class Artifact:
    """A piece of data a step can take as input: its content digest and where to read it (a Path, or a
    Dataset for a `datasets.<name>` input)."""

    digest: str
    path: Any


@dataclass
class StepResult:
    outputs: dict[str, Artifact]
    summary: str
    metrics: dict[str, Any]
    cached: bool
    gate_failed: str | None = None

    def document(self, port: str) -> Any:
        """A metrics output, parsed."""
        return json.loads(Path(self.outputs[port].path).read_text(encoding="utf-8"))


@dataclass
class StepRunner:
    store: Any  # engine.store.ArtifactStore
    parent: str  # the running stage's name, for work folders and messages
    log: Callable[[str], None] = lambda _m: None
    keys: list[str] = field(default_factory=list)  # every step's key, recorded in the parent's run record

    def run(self, uses: str, params: dict[str, Any], inputs: dict[str, Artifact | list[Artifact]],
            labels: dict[str, str | list[str]] | None = None) -> StepResult:
        """Run stage type `uses` (or serve it from the cache). `labels` name the inputs in its outputs, the
        way `<stage>.<port>` references name them in a recipe; they are not part of the key."""
        from engine.recipe import Ref, StageSpec
        from engine.registry import Registry
        from engine.providers import ProviderUnavailable
        from engine.runner import CACHED, GATE_FAILED, RAN, SKIPPED, StageJob, execute
        from engine.schema_errors import fill_defaults

        registry = Registry.discover()
        if uses not in registry:
            raise StageError(f"step type '{uses}' is not installed (installed: {', '.join(registry.names())})")
        stage_cls = registry.get(uses)
        params = fill_defaults(params, stage_cls.params_schema)
        problems = schema_problems(params, stage_cls.params_schema) + stage_cls().check(params)
        if problems:
            raise StageError(f"{self.parent}: step {uses} has bad parameters: {'; '.join(problems)}")
        names = labels or {}

        def ref(port: str, index: int | None = None) -> Ref:
            given = names.get(port)
            text = given[index] if isinstance(given, list) and index is not None else given
            return Ref(str(text or port).replace(".", "_"), port)  # the label is what StageContext.label shows

        refs = {port: [ref(port, i) for i in range(len(v))] if isinstance(v, list) else ref(port)
                for port, v in inputs.items()}
        # optional: a missing provider comes back as SKIPPED, re-raised below so the parent skips (or fails) alike
        spec = StageSpec(f"{self.parent}.{uses}", uses, stage_cls, params, refs, [], None, optional=True)  # type: ignore[arg-type]
        digests = {port: [a.digest for a in v] if isinstance(v, list) else v.digest for port, v in inputs.items()}
        paths = {port: [a.path for a in v] if isinstance(v, list) else v.path for port, v in inputs.items()}
        outcome = execute(self.store, StageJob(spec, digests, paths), self.log)
        if outcome.key:
            self.keys.append(outcome.key)
        if outcome.status == SKIPPED:
            raise ProviderUnavailable(str(outcome.error).removeprefix("optional stage skipped: "))
        if outcome.status not in (RAN, CACHED, GATE_FAILED):
            error = StageError(f"step {uses} failed: {outcome.error}")
            error.stage_log = outcome.traceback or ""  # type: ignore[attr-defined]
            raise error
        record = outcome.record or {}
        outputs = {port: Artifact(out["digest"], self.store.object_path(out["digest"]))
                   for port, out in record.get("outputs", {}).items()}
        return StepResult(outputs, record.get("summary", ""), record.get("metrics", {}), outcome.status == CACHED,
                          record.get("gate_failed"))


def schema_problems(params: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Each way `params` breaks `schema`, as `where: what` (for parameters built by code, not a recipe)."""
    from jsonschema import Draft202012Validator

    return [f"{'.'.join(map(str, e.absolute_path)) or 'parameters'}: {e.message}"
            for e in Draft202012Validator(schema).iter_errors(params)]
