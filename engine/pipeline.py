"""The library behind the CLI: open a recipe with its store, plan it, run it, and record what happened."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ortflow.engine.contracts.dataset import Dataset
from ortflow.engine.contracts.registry import Plugins
from ortflow.engine.contracts.types import Recipe, StageOutcome, Status
from ortflow.engine.leaves.errors import (
    EXIT_GATE_FAILED,
    EXIT_NO_SPACE,
    EXIT_OK,
    EXIT_STAGE_FAILED,
    Problem,
    RecipeError,
    no_space,
)
from ortflow.engine.publish.lock import Lock, LockWriter
from ortflow.engine.publish.out_folder import (
    Publisher,
    publish_stage,
    refuse_out_links,
    remove_stale_folders,
)
from ortflow.engine.publish.report import WrittenReport, write_report
from ortflow.engine.publish.report_types import SectionJson
from ortflow.engine.recipe import snapshot
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.executors import Executor, LocalExecutor
from ortflow.engine.run.jobs import LockedOutputs
from ortflow.engine.run.plan import PlanAction, PlannedStage, make_plan
from ortflow.engine.run.scheduler import EventsObserver, Scheduler, SchedulerEvents
from ortflow.engine.run.temp_folder import run_temp_folder
from ortflow.engine.store.artifacts import open_store
from ortflow.engine.store.base import Store
from ortflow.engine.store.digests import content_digest, input_digest
from ortflow.engine.store.location import cache_root

if TYPE_CHECKING:
    from ortflow.engine.store.remote import Remote


@dataclass(frozen=True)
class Workspace:
    """A validated recipe, its DAG and the artifact store it uses (reading through to a remote where one is
    configured): made once by Workspace.open and never changed afterwards."""

    recipe: Recipe
    graph: StageGraph
    store: Store
    out_dir: Path
    remote: Remote | None = None

    @classmethod
    def open(
        cls,
        recipe_path: Path,
        overrides: Sequence[str] = (),
        params_file: Path | None = None,
        cache_dir: Path | None = None,
        out_dir: Path | None = None,
        remote: Remote | None = None,
        say: Callable[[str], None] = lambda _m: None,
        warn: Callable[[str], None] = lambda _m: None,
    ) -> Workspace:
        """Open the store (once; with `remote`, one that reads through to it, saying what it pulls with `say`
        and `warn`), then the recipe: from its validated snapshot when nothing it depends on changed, else
        parsed and validated once. A bad recipe creates no cache folder."""
        cache = cache_root(cache_dir, recipe_path)
        plugins = Plugins()
        key = snapshot.snapshot_key(recipe_path, list(overrides), params_file)
        store = _open_store(cache, remote, say, warn) if cache.is_dir() else None
        loaded = snapshot.load(store, key, plugins) if key and store is not None else None
        if store is None or loaded is None:  # (no store: no snapshot was read)
            loaded = load(
                recipe_path, overrides, params_file, plugins
            )  # raises before the store is made
            store = store or _open_store(cache, remote, say, warn)
            if key:
                snapshot.save(store, key, *loaded)
        recipe, graph = loaded
        out = Path(out_dir) if out_dir else recipe.path.parent / "out" / recipe.name
        return cls(recipe, graph, store, out, remote)

    def sources(self) -> dict[str, tuple[str, Any]]:
        """Each input and dataset by reference: its content digest and what a stage receives for it."""
        found: dict[str, tuple[str, Any]] = {}
        for name, spec in sorted(self.recipe.inputs.items()):
            found[f"inputs.{name}"] = (input_digest(spec.path, self.store.hashes), spec.path)
        for name, dataset in sorted(self.recipe.datasets.items()):
            digest = content_digest(dataset.loader_cls, dataset.params, self.store.hashes)
            handle = Dataset(
                name, dataset.loader_cls(), dict(dataset.params), digest, str(dataset.location)
            )
            found[f"datasets.{name}"] = (digest, handle)
        return found

    def lock(self) -> Lock:
        """The recipe's lock file as it is now on disk (read each time: runs of other stages may write it)."""
        return Lock.read(self.recipe.lock_path)


def _open_store(
    cache: Path, remote: Remote | None, say: Callable[[str], None], warn: Callable[[str], None]
) -> Store:
    if remote is None:
        return open_store(cache)
    from ortflow.engine.store.shared import SharedStore

    return open_store(cache, lambda root: SharedStore(root, remote, say, warn))


def load(
    recipe_path: Path,
    overrides: Sequence[str] = (),
    params_file: Path | None = None,
    plugins: Plugins | None = None,
) -> tuple[Recipe, StageGraph]:
    """Validate a recipe and build its DAG, parsing it once; every problem is reported at once as a RecipeError.
    The graph is built without networkx, which is asked only to say where the cycles are when there are any (from
    the recipe as parsed, not read again) and to render the DAG (`engine dag`)."""
    from ortflow.engine.recipe.graph import cycle_problems, stage_graph
    from ortflow.engine.recipe.load import (
        read_recipe,
    )  # here: a run whose recipe snapshot is valid skips it

    with _no_cyclic_gc():
        recipe, problems = read_recipe(
            Path(recipe_path), plugins or Plugins(), list(overrides), params_file
        )
    graph = None if problems else StageGraph.from_recipe(recipe)
    if graph is None:
        raise RecipeError(problems + cycle_problems(stage_graph(recipe), recipe))
    return recipe, graph


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Loading a large recipe makes many small objects and no reference cycles worth collecting: Python's
    cyclic collector passes over them again and again (a quarter of a 10,000-stage load)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def open_workspace(
    recipe_path: Path,
    overrides: Sequence[str] = (),
    params_file: Path | None = None,
    cache_dir: Path | None = None,
    out_dir: Path | None = None,
) -> Workspace:
    """Workspace.open under its old name (bench scripts and plugins call it)."""
    return Workspace.open(recipe_path, overrides, params_file, cache_dir, out_dir)


def select(ws: Workspace, targets: list[str]) -> set[str] | None:
    """The target stages and everything upstream of them (None: the whole recipe)."""
    if not targets:
        return None
    from ortflow.engine.leaves.errors import suggest

    targets = [
        i for t in targets for i in ws.recipe.matrices.get(t, [t])
    ]  # a matrix stage: all its variants
    unknown = [t for t in targets if t not in ws.recipe.stages]
    if unknown:
        names = [*ws.recipe.stages, *ws.recipe.matrices]
        raise RecipeError(
            [Problem(f"the recipe has no stage '{t}'", hint=suggest(t, names)) for t in unknown]
        )
    chosen = set(targets)
    for target in targets:
        chosen |= ws.graph.ancestors(target)
    return chosen


def plan(ws: Workspace, targets: Sequence[str] = ()) -> list[PlannedStage]:
    chosen = select(ws, list(targets))
    digests = {ref: digest for ref, (digest, _) in ws.sources().items()}
    planned = make_plan(ws.recipe, ws.graph, ws.store, digests, ws.lock())
    return [p for p in planned if chosen is None or p.name in chosen]


@dataclass(frozen=True)
class StageState:
    """`engine status`: a stage of the recipe against its lock file and this cache."""

    stage: str
    state: str  # up to date | locked, not in this cache | not in lock | changed
    reason: str  # why it is not up to date ("" when it is)

    @property
    def up_to_date(self) -> bool:
        return self.state == "up to date"


def status(ws: Workspace) -> list[StageState]:
    """Each stage's state: built as the lock records and in the cache; recorded but not built here; built but
    not recorded; or changed since the lock was written (and why)."""
    lock = ws.lock()
    rows = []
    for item in plan(ws):
        entry = lock.entries().get(item.name)
        in_lock = entry is not None and item.key is not None and not item.against_lock
        if item.action == PlanAction.CACHED and in_lock:
            state, why = "up to date", ""
        elif in_lock:
            state, why = "locked, not in this cache", item.reason
        elif entry is None:
            state, why = (
                "not in lock",
                "built, not yet recorded (a run with --set?)"
                if item.action == PlanAction.CACHED
                else item.reason,
            )
        else:
            state, why = "changed", item.against_lock or item.reason
        rows.append(StageState(item.name, state, why))
    return rows


@dataclass
class RunSummary:
    outcomes: dict[str, StageOutcome]
    report_path: Path
    exit_code: int
    warnings: list[str]
    sections: list[SectionJson] = field(
        default_factory=list
    )  # the report's stage sections, for the console
    # The outputs folder's disk filled: which, and the fix (exit code 5).
    disk_full: str | None = None


def run(
    ws: Workspace,
    jobs: int = 1,
    keep_going: bool = False,
    targets: Sequence[str] = (),
    events: SchedulerEvents | None = None,
    executor: Executor | None = None,
) -> RunSummary:
    chosen = select(ws, list(targets))
    lock = ws.lock()  # read first: a damaged lock stops the run before anything executes
    refuse_out_links(ws.out_dir, ws.recipe.path.parent, ws.recipe.stages)  # nothing ran yet
    with ws.store.in_use().held():
        ws.store.remove_stale_tmp()
        ws.store.refuse_links()
        sources = ws.sources()
        digests = {ref: digest for ref, (digest, _) in sources.items()}
        # With overrides the recipe file no longer says what was built, so its lock file is left alone.
        lock_writer = LockWriter(ws.recipe, ws.store, digests) if not ws.recipe.overrides else None
        executor = executor or LocalExecutor(jobs)
        publisher = Publisher(ws.store, ws.out_dir)
        # each finished stage goes into the lock file (where it is written), then out/, then the caller's view:
        # a killed run's lock file still lists what it built, and a full out/ loses none of it
        observers = [o for o in (lock_writer, publisher) if o is not None]
        events = SchedulerEvents.telling([*observers, EventsObserver(events or SchedulerEvents())])
        locked = LockedOutputs(
            ws.recipe.lock_path.name, lock.locked_outputs(), lock.pinned_values()
        )
        scheduler = Scheduler(
            ws.recipe, ws.graph, ws.store, executor, sources, keep_going, events, locked
        )
        with run_temp_folder(ws.store):  # what ORT and libraries put in $TMPDIR: cleaned if killed
            outcomes = _schedule(scheduler, executor, chosen)
        # Under the store mutex: a gc waiting for it must find the lock file naming what this run built.
        return _conclude(ws, lock, lock_writer, outcomes, digests, publisher)


def _schedule(
    scheduler: Scheduler, executor: Executor, chosen: set[str] | None
) -> dict[str, StageOutcome]:
    try:
        outcomes = scheduler.run(chosen)
    except BaseException:
        executor.shutdown(
            cancel=True
        )  # do not wait for running stages: their work folders are discarded
        raise
    executor.shutdown()
    return outcomes


def _conclude(
    ws: Workspace,
    lock: Lock,
    lock_writer: LockWriter | None,
    outcomes: dict[str, StageOutcome],
    digests: dict[str, str],
    publisher: Publisher,
) -> RunSummary:
    """After the run: the lock file's drift warnings, the lock file written (not with overrides), stale out/
    folders removed and the report written (not when out/ filled up: it would describe outputs not there)."""
    warnings = [outcome.note for _, outcome in sorted(outcomes.items()) if outcome.note]
    warnings += lock.drift(outcomes, ws.recipe)
    if lock_writer is not None:
        lock_writer.add(outcomes, final=True)
    else:
        warnings.append(
            f"{ws.recipe.lock_path.name} was not updated: the run used --set/--params overrides"
        )
    if (
        not ws.recipe.overrides
    ):  # a one-run `--set` narrowing a matrix does not drop the other variants
        remove_stale_folders(ws.out_dir, ws.recipe.stages)
    written = _report(ws, outcomes, digests, publisher)
    if publisher.full is not None:
        return RunSummary(
            outcomes, written.path, EXIT_NO_SPACE, warnings, written.sections, publisher.full
        )
    return RunSummary(outcomes, written.path, exit_code(outcomes), warnings, written.sections)


def _report(
    ws: Workspace, outcomes: dict[str, StageOutcome], digests: dict[str, str], publisher: Publisher
) -> WrittenReport:
    """report.json/.md/.html in out/, unless out/ filled up (before, or while they were written)."""
    if publisher.full is None:
        try:
            return write_report(ws.recipe, ws.out_dir, outcomes, digests, ws.store)
        except OSError as exc:
            if no_space(exc) is None:
                raise
            publisher.filled()
    return WrittenReport(ws.out_dir / "report.json", [])


def rerender_report(ws: Workspace) -> tuple[Path, list[str], int]:
    """Write the outputs and report.json/.md/.html again from what the cache holds for the recipe as it is
    now, running nothing. Returns the report's path, the stages the cache could not supply, and the exit
    code the run would have had."""
    sources = ws.sources()
    from ortflow.engine.run.replay import replay  # `engine report` only: a run does not import it

    outcomes, missing = replay(ws.recipe, ws.graph, ws.store, sources)
    if not outcomes:
        raise RecipeError(
            [
                Problem(
                    f"nothing of {ws.recipe.name} is in the cache {ws.store.root}",
                    hint="run the recipe first (`engine run`)",
                )
            ]
        )
    refuse_out_links(ws.out_dir, ws.recipe.path.parent, ws.recipe.stages)
    for outcome in outcomes.values():
        publish_stage(ws.store, ws.out_dir, outcome)
    digests = {ref: digest for ref, (digest, _) in sources.items()}
    return (
        write_report(ws.recipe, ws.out_dir, outcomes, digests, ws.store).path,
        missing,
        exit_code(outcomes),
    )


def exit_code(outcomes: dict[str, StageOutcome]) -> int:
    """An optional stage's own refusal (tolerated: dropped from its dependents) fails nothing."""
    statuses = {o.status for o in outcomes.values() if not o.tolerated}
    if any(o.out_of_space for o in outcomes.values()):
        return EXIT_NO_SPACE
    if Status.FAILED in statuses:
        return EXIT_STAGE_FAILED
    if Status.GATE_FAILED in statuses:
        return EXIT_GATE_FAILED
    return EXIT_OK
