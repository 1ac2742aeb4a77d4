"""The commands behind `engine COMMAND`: each reads its arguments, calls the library (engine.pipeline, the
store, the records) and hands what to show to the console (engine.cli.console). No command prints by itself."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ortflow.engine.cli.command_base import CommandBase
from ortflow.engine.cli.run_options import check_run_options, run_executor, run_remote
from ortflow.engine.leaves.errors import EXIT_DIFFERENT, EXIT_OK, EXIT_STAGE_FAILED, OrtflowError
from ortflow.engine.leaves.terminal_text import printable
from ortflow.engine.leaves.wording import counted
from ortflow.engine.store.remote import remote_call
from ortflow.engine.store.remote_trust import stage_shown

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output


def cmd_run(args: argparse.Namespace, out: Output) -> int:
    """`engine run`: its options checked, the workspace opened (reading through to a remote), the recipe run
    with progress shown, its table printed, and what it built pushed when asked."""
    from ortflow.engine import pipeline

    check_run_options(args)
    remote = run_remote(args)
    ws = CommandBase(args, out).workspace(remote)
    _key_caveats(ws.recipe, out)
    executor = run_executor(args)
    with out.progress(ws.recipe) as events:
        summary = pipeline.run(ws, args.jobs or 1, args.keep_going, args.stages, events, executor)
    out.run_table(ws.recipe, summary)
    if args.push:
        return summary.exit_code or _push_built(ws, remote, summary, out)
    return summary.exit_code


def _push_built(ws: Any, remote: Any, summary: Any, out: Output) -> int:
    """`run --push`: what the run built or found (each outcome with a record) pushed to the remote."""
    from ortflow.engine.store.transfer import push

    keys = {o.key: name for name, o in summary.outcomes.items() if o.record is not None and o.key}
    return _transfer(
        out,
        "pushed",
        lambda meter: push(ws.store, remote, keys, meter),
        remote,
        "in the local cache",
        set(),
    )


def cmd_validate(args: argparse.Namespace, out: Output) -> int:
    recipe, graph = CommandBase(args).recipe()
    edges = sum(len(preds) for preds in graph.predecessors.values())
    out.say(
        f"{args.recipe}: valid — {counted(len(recipe.stages), 'stage')}, "
        f"{counted(len(recipe.inputs), 'input')}, {counted(edges, 'edge')}"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli import listings
    from ortflow.engine.pipeline import plan

    ws = CommandBase(args).workspace()
    planned = plan(ws, args.stages)
    if args.json:
        out.json(listings.planned(planned))
    else:
        out.plan_table(planned, ws.recipe.matrices)
        _key_caveats(ws.recipe, out)
    return EXIT_OK


def _key_caveats(recipe: Any, out: Output) -> None:
    """What the recipe's dataset keys cannot cover, said before anything is trusted to be up to date."""
    for name, spec in recipe.datasets.items():
        caveat = spec.loader_cls().key_caveat(spec.params)
        if caveat:
            out.say(f"note: dataset '{name}' ({spec.loader}): {caveat}")


def cmd_dag(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.recipe import graph as dag

    recipe, _ = CommandBase(args).recipe()
    render: Callable[..., str] = {
        "text": dag.render_text,
        "mermaid": dag.render_mermaid,
        "dot": dag.render_dot,
    }[args.format]
    # networkx, for drawing only; plain print, so the terminal rule is applied here (engine.leaves.terminal_text)
    print(printable(render(dag.stage_graph(recipe), recipe)))
    return EXIT_OK


def cmd_report(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.pipeline import rerender_report

    path, missing, code = rerender_report(CommandBase(args).workspace())
    if missing:
        out.error(
            f"not in the cache, left out of the report: {', '.join(missing)} — run the recipe to build them"
        )
    out.say(f"report: {path.with_suffix('.html')} (and .md, .json)")
    return code if code != EXIT_OK else (EXIT_STAGE_FAILED if missing else EXIT_OK)


def cmd_compare(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli import listings
    from ortflow.engine.publish.compare import compare_files

    rows = compare_files(args.before, args.after)
    if args.json:
        out.json(listings.differences(rows))
    else:
        out.compare_table(rows)
    return (
        EXIT_DIFFERENT if rows else EXIT_OK
    )  # like diff(1): scripts can ask "did anything change?"


def cmd_status(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli import listings
    from ortflow.engine.pipeline import status

    rows = status(CommandBase(args).workspace())
    if args.json:
        out.json(listings.statuses([(row.stage, row.state, row.reason) for row in rows]))
    else:
        out.status_table([(row.stage, row.state, row.reason) for row in rows])
    return EXIT_OK if all(row.up_to_date for row in rows) else EXIT_STAGE_FAILED


def cmd_stages(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli import listings
    from ortflow.engine.contracts.registry import Plugins
    from ortflow.engine.leaves.errors import suggest

    plugins = Plugins()
    if args.name is None:
        out.json(listings.plugins(plugins)) if args.json else out.stage_list(plugins)
        return EXIT_OK
    for registry in (plugins.stages, plugins.datasets, plugins.metrics):
        if args.name in registry:
            out.json(listings.plugin(registry, args.name)) if args.json else out.plugin_detail(
                registry, args.name
            )
            return EXIT_OK
    hint = suggest(
        args.name, plugins.stages.names() + plugins.datasets.names() + plugins.metrics.names()
    )
    raise OrtflowError(
        f"unknown stage type, dataset loader or metric '{args.name}'"
        + (f" — {hint}" if hint else " — see `engine stages`")
    )


def cmd_cache_ls(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli import listings

    store = CommandBase(args).store()
    out.json(listings.cached_runs(store)) if args.json else out.cache_list(store)
    return EXIT_OK


def cmd_cache_verify(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli.cache_scope import locked_outputs

    if args.remote is not None:
        from ortflow.engine.cli.trust_commands import cmd_cache_verify_remote

        return cmd_cache_verify_remote(args, out)
    store = CommandBase(args).store()
    damage = store.verify(locked_outputs(args.recipes, store.root))
    return _damage_report(
        out,
        str(store.root),
        damage,
        args.remove,
        lambda: store.remove_damaged(damage),
        "the next run rebuilds them",
        "`engine cache verify --remove` to delete them so the next run rebuilds them",
    )


def _damage_report(
    out: Output,
    where: str,
    damage: list[Any],
    remove: bool,
    removing: Callable[[], Any],
    after_removal: str,
    fix: str,
) -> int:
    """What `cache verify` found in a store (local or remote), removed with --remove."""
    for item in damage:
        out.error(f"{where}: damaged {item.what} {item.name}: {item.reason}")
    if damage and remove:
        removing()
        out.say(f"removed {len(damage)} damaged entries from {where}; {after_removal}")
    elif damage:
        out.error(f"run {fix}")
    else:
        out.say(f"{where}: all objects and run records intact")
    return EXIT_STAGE_FAILED if damage and not remove else EXIT_OK


def cmd_cache_gc(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.contracts.types import lock_path_for
    from ortflow.engine.publish.lock import collect_garbage

    if not args.recipes:
        raise OrtflowError(
            "name the recipes whose builds to keep, e.g. `engine cache gc recipes/*.yaml` "
            "— everything their lock files do not reference is removed"
        )
    store = CommandBase(args).store()
    collected = collect_garbage(
        store, [lock_path_for(recipe) for recipe in args.recipes], dry_run=args.dry_run
    )
    if args.dry_run:
        for key, stage in sorted(collected.runs.items(), key=lambda item: item[1]):
            out.say(f"would remove run {key[:12]} ({stage})")
    verb = "would remove" if args.dry_run else "removed"
    out.say(
        f"{verb} {counted(len(collected.runs), 'run record')} and {counted(len(collected.objects), 'object')} "
        f"({collected.bytes / 1e6:.1f} MB)"
    )
    if (
        collected.stale
    ):  # temporary work of killed runs and pulls (ORT's pre.quant.*, partial downloads)
        size = sum(collected.stale.values()) / 1e6
        out.say(
            f"{verb} {counted(len(collected.stale), 'stale work folder')} in {store.tmp} ({size:.1f} MB "
            "of it) that killed runs or pulls left"
        )
    return EXIT_OK


def cmd_cache_adopt(args: argparse.Namespace, out: Output) -> int:
    """Only records this machine's local key signed, each object re-hashed (engine.store.adoption)."""
    from ortflow.engine.store.adoption import adopt
    from ortflow.engine.store.signing import shared_key

    if shared_key() is None:
        raise OrtflowError(
            "no ORTFLOW_SIGNING_KEY to adopt the cache under — set the team's key (ORTFLOW_SIGNING_KEY_FILE) first"
        )
    store = CommandBase(args).store()
    with store.in_use().held():
        done = adopt(store)
    for line in done.refused:
        out.error(f"{store.root}: not adopted: {line}")
    out.say(
        f"{store.root}: signed {counted(len(done.adopted), 'run record')} with the team key; "
        f"{done.already} already signed; {len(done.refused)} refused (not served while the key is set)"
    )
    return EXIT_STAGE_FAILED if done.refused else EXIT_OK


def cmd_cache_push(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli.cache_scope import lock_keys
    from ortflow.engine.store.remote_config import required_remote
    from ortflow.engine.store.transfer import push

    store = CommandBase(args).store()
    remote = required_remote(
        args.remote, args.recipes[0] if args.recipes else Path.cwd(), args.allow_unsigned
    )
    keys, host_specific = (
        lock_keys(args.recipes, store)
        if args.recipes
        else (
            {  # a record's stage as it is recorded (a name)
                key: stage_shown(key, record) for key, record in store.iter_runs()
            },
            set(),
        )
    )
    return _transfer(
        out,
        "pushed",
        lambda meter: push(store, remote, keys, meter),
        remote,
        "in the local cache",
        host_specific,
    )


def cmd_cache_pull(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli.cache_scope import lock_keys
    from ortflow.engine.store.remote_config import required_remote
    from ortflow.engine.store.transfer import pull

    store = CommandBase(args).store(create=True)
    remote = required_remote(args.remote, args.recipes[0], args.allow_unsigned)
    keys, host_specific = lock_keys(args.recipes, store, pulling=True)
    return _transfer(
        out,
        "pulled",
        lambda meter: pull(store, remote, keys, meter),
        remote,
        "on the remote",
        host_specific,
    )


def _transfer(
    out: Output,
    verb: str,
    move: Callable[[Any], Any],
    remote: Any,
    source: str,
    host_specific: set[str],
) -> int:
    import time

    from ortflow.engine.cli.transfer_view import summary

    started = time.perf_counter()
    with out.transfer() as meter:
        tally = remote_call(remote, lambda: move(meter))
    for problem in tally.problems:
        out.error(problem)
    elsewhere = sorted(set(tally.missing) & host_specific)
    if elsewhere:  # made for one kind of machine: another kind measures them itself
        out.say(
            f"not {source} for this machine, so not {verb}: {', '.join(elsewhere)} (results made for the machine that "
            "runs them: a run here makes them)"
        )
        tally.missing = [stage for stage in tally.missing if stage not in host_specific]
    if tally.missing:
        out.error(
            f"not {source}, so not {verb}: {', '.join(sorted(set(tally.missing)))} — run the recipe "
            f"{'first' if verb == 'pushed' else 'and push it from the machine that built it'}"
        )
    out.say(summary(verb, tally, remote.shown, time.perf_counter() - started))
    return EXIT_STAGE_FAILED if tally.problems or tally.missing else EXIT_OK
