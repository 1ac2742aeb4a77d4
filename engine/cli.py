"""`engine`: a thin command line over engine.pipeline. Heavy imports wait until a command needs them."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable

from ortflow.engine.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_STAGE_FAILED, OrtflowError


def _recipe_options(parser: argparse.ArgumentParser, cache: bool = True) -> None:
    parser.add_argument("recipe", type=Path, help="the recipe YAML file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a recipe value, e.g. --set opt.with.level=all (repeatable)")
    parser.add_argument("--params", type=Path, metavar="FILE", help="YAML file of KEY: VALUE overrides")
    if cache:
        parser.add_argument("--cache", type=Path, metavar="DIR",
                            help="artifact store (default: $ORTFLOW_CACHE, else .ortflow/ beside the recipe)")


def _common_options() -> argparse.ArgumentParser:
    """--debug and --quiet, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="print errors only")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(prog="engine", description="ortflow: cached ONNX Runtime optimization pipelines",
                                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser = functools.partial(sub.add_parser, parents=[common])  # type: ignore[method-assign]
    _run_command(sub)
    _inspection_commands(sub)
    _cache_commands(sub, common)
    return parser


def _run_command(sub: Any) -> None:
    run = sub.add_parser("run", help="run a recipe (only what is not cached)")
    _recipe_options(run)
    run.add_argument("stages", nargs="*", help="run only these stages and what they need")
    run.add_argument("-j", "--jobs", type=int, default=None,
                     help="stages to run at once (default: 1 locally, every worker thread on Dask)")
    run.add_argument("--executor", choices=["local", "dask"], default="local",
                     help="local: a thread pool here (default); dask: each stage a task on a Dask cluster")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="the Dask scheduler, e.g. tcp://10.0.0.5:8786 (the cache must be a path all workers share)")
    run.add_argument("-k", "--keep-going", action="store_true", help="after a failure, finish independent branches")
    run.add_argument("--out", type=Path, metavar="DIR", help="where outputs are copied (default out/<name>/ beside the recipe)")
    run.set_defaults(handler=_cmd_run)


def _inspection_commands(sub: Any) -> None:
    """Commands that look at a recipe, its cache or its records without running a stage."""
    validate = sub.add_parser("validate", help="check a recipe without running anything")
    _recipe_options(validate, cache=False)
    validate.set_defaults(handler=_cmd_validate)

    plan = sub.add_parser("plan", help="what a run would do, and why")
    _recipe_options(plan)
    plan.add_argument("stages", nargs="*", help="only these stages and what they need")
    plan.set_defaults(handler=_cmd_plan)

    dag = sub.add_parser("dag", help="show the stage graph")
    _recipe_options(dag, cache=False)
    dag.add_argument("--format", choices=["text", "mermaid", "dot"], default="text")
    dag.set_defaults(handler=_cmd_dag)

    status = sub.add_parser("status", help="which stages are up to date against the lock file")
    _recipe_options(status)
    status.set_defaults(handler=_cmd_status)

    report = sub.add_parser("report", help="render report.json/.md/.html again from the cache, running nothing")
    _recipe_options(report)
    report.add_argument("--out", type=Path, metavar="DIR", help="where the report goes (default out/<name>/)")
    report.set_defaults(handler=_cmd_report)

    compare = sub.add_parser("compare", help="what changed between two lock files (e.g. from two commits)")
    compare.add_argument("before", type=Path, help="a lock file, or a run's report.json")
    compare.add_argument("after", type=Path, help="a lock file, or a run's report.json")
    compare.set_defaults(handler=_cmd_compare)

    stages = sub.add_parser("stages", help="list stage types and dataset loaders, or describe one")
    stages.add_argument("name", nargs="?", help="a stage type or dataset loader to describe")
    stages.set_defaults(handler=_cmd_stages)


def _cache_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    cache = sub.add_parser("cache", help="inspect and maintain the artifact store")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    cache_sub.add_parser = functools.partial(cache_sub.add_parser, parents=[common])  # type: ignore[method-assign]
    for name, helptext, handler in (
        ("ls", "list cached stage runs", _cmd_cache_ls),
        ("verify", "re-hash every object and report damage", _cmd_cache_verify),
        ("gc", "remove what no given recipe's lock file references", _cmd_cache_gc),
    ):
        action = cache_sub.add_parser(name, help=helptext)
        action.add_argument("recipes", nargs="*", type=Path,
                            help="recipes whose lock files say what to keep" if name == "gc" else "a recipe whose cache to use")
        action.add_argument("--cache", type=Path, metavar="DIR", help="artifact store (default: as for run)")
        action.set_defaults(handler=handler)
        if name == "verify":
            action.add_argument("--remove", action="store_true", help="delete damaged entries so they rebuild")
        if name == "gc":
            action.add_argument("--dry-run", action="store_true", help="only say what would go")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.debug = getattr(args, "debug", False)
    args.quiet = getattr(args, "quiet", False)
    from ortflow.engine.console import Output

    out = Output(quiet=args.quiet, debug=args.debug)
    try:
        return int(args.handler(args, out) or EXIT_OK)
    except OrtflowError as exc:
        out.error(str(exc))
        if args.debug:
            out.traceback()
        return exc.exit_code
    except KeyboardInterrupt:
        out.error("interrupted: finished stages are cached; run the same command again to resume")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)  # stage threads hold no state worth waiting for: their work folders are discarded
    except Exception as exc:  # noqa: BLE001 - boundary: CLI; an engine bug is said plainly, traceback only when asked
        out.error(f"internal error (a bug in ortflow): {type(exc).__name__}: {exc} — run with --debug for the traceback")
        if args.debug:
            out.traceback()
        return EXIT_INTERNAL


def _workspace(args: argparse.Namespace) -> Any:
    from ortflow.engine.pipeline import open_workspace

    return open_workspace(args.recipe, args.overrides, args.params, args.cache, getattr(args, "out", None))


def _cmd_run(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine import pipeline

    if args.jobs is not None and args.jobs < 1:
        raise OrtflowError("--jobs must be at least 1")
    if (args.executor == "dask") != bool(args.scheduler):
        raise OrtflowError("--executor dask needs --scheduler tcp://HOST:PORT" if args.scheduler is None
                           else "--scheduler is for --executor dask")
    ws = _workspace(args)
    executor = None
    if args.executor == "dask":
        from ortflow.engine.run.dask_executor import DaskExecutor

        executor = DaskExecutor(args.scheduler, args.jobs)
    with out.progress(ws.recipe) as events:
        summary = pipeline.run(ws, args.jobs or 1, args.keep_going, args.stages, events, executor)
    out.run_table(ws.recipe, summary)
    return summary.exit_code


def _cmd_validate(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.pipeline import load

    recipe, graph = load(args.recipe, args.overrides, args.params)
    out.say(f"{args.recipe}: valid — {len(recipe.stages)} stages, {len(recipe.inputs)} inputs, {graph.number_of_edges()} edges")
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.pipeline import plan

    ws = _workspace(args)
    out.plan_table(plan(ws, args.stages), ws.recipe.matrices)
    return EXIT_OK


def _cmd_dag(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.pipeline import load
    from ortflow.engine.recipe import graph as dag

    recipe, graph = load(args.recipe, args.overrides, args.params)
    render: Callable[..., str] = {"text": dag.render_text, "mermaid": dag.render_mermaid, "dot": dag.render_dot}[args.format]
    print(render(graph, recipe))
    return EXIT_OK


def _cmd_report(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.pipeline import rerender_report

    path, missing, code = rerender_report(_workspace(args))
    if missing:
        out.error(f"not in the cache, left out of the report: {', '.join(missing)} — run the recipe to build them")
    out.say(f"report: {path.with_suffix('.html')} (and .md, .json)")
    return code if code != EXIT_OK else (EXIT_STAGE_FAILED if missing else EXIT_OK)


def _cmd_compare(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.record.compare import compare_files

    out.compare_table(compare_files(args.before, args.after))
    return EXIT_OK


def _cmd_status(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.pipeline import plan
    from ortflow.engine.run.plan import PlanAction

    ws = _workspace(args)
    lock = ws.read_lockfile()
    rows = []
    for item in plan(ws):
        entry = lock["stages"].get(item.name)
        in_lock = entry is not None and entry["key"] == item.key
        if item.action == PlanAction.CACHED and in_lock:
            state, why = "up to date", ""
        elif in_lock:
            state, why = "locked, not in this cache", item.reason
        elif entry is None:
            state, why = "not in lock", "built, not yet recorded (a run with --set?)" if item.action == PlanAction.CACHED else item.reason
        else:
            state, why = "changed", item.against_lock or item.reason
        rows.append((item.name, state, why))
    out.status_table(rows)
    return EXIT_OK if all(r[1] == "up to date" for r in rows) else EXIT_STAGE_FAILED


def _cmd_stages(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.errors import suggest
    from ortflow.engine.registry import Plugins

    plugins = Plugins()
    if args.name is None:
        out.stage_list(plugins)
        return EXIT_OK
    for registry in (plugins.stages, plugins.datasets):
        if args.name in registry:
            out.plugin_detail(registry, args.name)
            return EXIT_OK
    hint = suggest(args.name, plugins.stages.names() + plugins.datasets.names())
    raise OrtflowError(f"unknown stage type or dataset loader '{args.name}'" + (f" — {hint}" if hint else " — see `engine stages`"))


def _cache_store(args: argparse.Namespace) -> Any:
    from ortflow.engine.pipeline import default_cache
    from ortflow.engine.store.artifacts import open_store

    if args.cache:
        root = Path(args.cache)
    elif args.recipes:
        root = default_cache(args.recipes[0])
    else:
        root = Path(os.environ.get("ORTFLOW_CACHE") or ".ortflow")
    if not (root / "objects").is_dir():
        raise OrtflowError(f"no artifact store at {root} — name a recipe, or pass --cache DIR")
    return open_store(root)


def _cmd_cache_ls(args: argparse.Namespace, out: Any) -> int:
    out.cache_list(_cache_store(args))
    return EXIT_OK


def _cmd_cache_verify(args: argparse.Namespace, out: Any) -> int:
    store = _cache_store(args)
    damage = store.verify()
    for item in damage:
        out.error(f"{store.root}: damaged {item.what} {item.name}: {item.reason}")
    if damage and args.remove:
        store.remove_damaged(damage)
        out.say(f"removed {len(damage)} damaged entries; the next run rebuilds them")
    elif damage:
        out.error("run `engine cache verify --remove` to delete them so the next run rebuilds them")
    else:
        out.say(f"{store.root}: all objects and run records intact")
    return EXIT_STAGE_FAILED if damage and not args.remove else EXIT_OK


def _cmd_cache_gc(args: argparse.Namespace, out: Any) -> int:
    from ortflow.engine.record.lockfile import read_lock, referenced
    from ortflow.engine.types import lock_path_for

    if not args.recipes:
        raise OrtflowError("name the recipes whose builds to keep, e.g. `engine cache gc recipes/*.yaml` "
                           "— everything their lock files do not reference is removed")
    store = _cache_store(args)
    keys: set[str] = set()
    digests: set[str] = set()
    for recipe in args.recipes:
        lock_path = lock_path_for(recipe)
        if not lock_path.exists():
            raise OrtflowError(f"{lock_path}: no lock file — run the recipe first, or leave it out of the list")
        more_keys, more_digests = referenced(read_lock(lock_path))
        keys |= more_keys
        digests |= more_digests
    if args.dry_run:
        runs = sum(1 for key, _ in store.iter_runs() if key not in keys)
        out.say(f"would remove {runs} run records and the objects only they reference")
        return EXIT_OK
    runs, objects, freed = store.gc(keys, digests)
    out.say(f"removed {runs} run records and {objects} objects ({freed / 1e6:.1f} MB)")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
