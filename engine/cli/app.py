"""`engine` (also installed as `ortflow`): the argument parser and the one boundary that turns errors into exit
codes. Each command is a thin function in engine.cli.commands over the library (engine.pipeline); heavy imports
wait until a command needs them."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ortflow
from ortflow.engine.cli import cli_help, commands
from ortflow.engine.cli import doctor as doctor_command
from ortflow.engine.cli.cli_starter import add_starter_commands
from ortflow.engine.cli.trust_commands import add_allow_unsigned, add_trust_commands
from ortflow.engine.leaves.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SPACE,
    EXIT_OK,
    OrtflowError,
    StageError,
    no_space,
    no_space_message,
)
from ortflow.engine.leaves.secrets import redacted_output

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output


def _recipe_options(parser: argparse.ArgumentParser, cache: bool = True) -> None:
    parser.add_argument("recipe", type=Path, nargs="?", metavar="RECIPE", help=cli_help.RECIPE_HELP)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe value, e.g. --set opt.with.level=all (repeatable)",
    )
    parser.add_argument(
        "--params", type=Path, metavar="FILE", help="YAML file of KEY: VALUE overrides"
    )
    if cache:
        parser.add_argument(
            "--cache",
            type=Path,
            metavar="DIR",
            help="artifact store (default: $ORTFLOW_CACHE, else .ortflow/ beside the recipe)",
        )


def _common_options() -> argparse.ArgumentParser:
    """--debug, --quiet and --verbose, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    common.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="print errors only"
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="more detail: full cache keys, and what a failed stage printed",
    )
    return common


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print machine-readable JSON instead of a table"
    )


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = cli_help.top_parser("ortflow: cached ONNX Runtime optimization pipelines", common)
    parser.add_argument("--version", action="version", version=f"ortflow {ortflow.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser = functools.partial(sub.add_parser, parents=[common])  # type: ignore[method-assign]
    _run_command(sub)
    add_starter_commands(sub)
    _inspection_commands(sub)
    _cache_commands(sub, common)
    return parser


def _run_command(sub: Any) -> None:
    run = sub.add_parser("run", help="run a recipe (only what is not cached)")
    _recipe_options(run)
    cli_help.stages_argument(run, "run only these stages and what they need")
    run.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="stages to run at once (default: 1 locally, every worker thread on Dask)",
    )
    run.add_argument(
        "--executor",
        choices=["local", "dask"],
        default="local",
        help="local: a thread pool here (default); dask: each stage a task on a Dask cluster",
    )
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler, e.g. tcp://10.0.0.5:8786 (the cache must be a path all workers share, or give --remote)",
    )
    run.add_argument(
        "-k",
        "--keep-going",
        action="store_true",
        help="after a failure, finish independent branches",
    )
    run.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where outputs are copied (default out/<name>/ beside the recipe)",
    )
    run.add_argument(
        "--remote",
        metavar="URL",
        help="a shared cache (s3://bucket/prefix, file:///mnt/share) looked up on a "
        "local miss (default: $ORTFLOW_REMOTE, else `remote:` in ortflow.yaml)",
    )
    run.add_argument(
        "--push",
        action="store_true",
        help="afterwards, upload this run's records and objects to the remote",
    )
    add_allow_unsigned(run)
    run.set_defaults(handler=commands.cmd_run)


def _inspection_commands(sub: Any) -> None:
    """Commands that look at a recipe, its cache or its records without running a stage."""
    validate = sub.add_parser("validate", help="check a recipe without running anything")
    _recipe_options(validate, cache=False)
    validate.set_defaults(handler=commands.cmd_validate)

    plan = sub.add_parser("plan", help="what a run would do, and why")
    _recipe_options(plan)
    cli_help.stages_argument(plan, "only these stages and what they need")
    _json_option(plan)
    plan.set_defaults(handler=commands.cmd_plan)

    dag = sub.add_parser("dag", help="show the stage graph")
    _recipe_options(dag, cache=False)
    dag.add_argument("--format", choices=["text", "mermaid", "dot"], default="text")
    dag.set_defaults(handler=commands.cmd_dag)

    status = sub.add_parser("status", help="which stages are up to date against the lock file")
    _recipe_options(status)
    _json_option(status)
    status.set_defaults(handler=commands.cmd_status)

    report = sub.add_parser(
        "report", help="render report.json/.md/.html again from the cache, running nothing"
    )
    _recipe_options(report)
    report.add_argument(
        "--out", type=Path, metavar="DIR", help="where the report goes (default out/<name>/)"
    )
    report.set_defaults(handler=commands.cmd_report)

    compare = sub.add_parser(
        "compare",
        help="what changed between two lock files (e.g. from two commits); exit 1 if anything did",
    )
    compare.add_argument("before", type=Path, help="a lock file, or a run's report.json")
    compare.add_argument("after", type=Path, help="a lock file, or a run's report.json")
    _json_option(compare)
    compare.set_defaults(handler=commands.cmd_compare)

    stages = sub.add_parser("stages", help="list stage types and dataset loaders, or describe one")
    stages.add_argument("name", nargs="?", help="a stage type or dataset loader to describe")
    _json_option(stages)
    stages.set_defaults(handler=commands.cmd_stages)
    doctor_command.register(sub)


def _cache_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    cache = sub.add_parser("cache", help="inspect and maintain the artifact store")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    cache_sub.add_parser = functools.partial(cache_sub.add_parser, parents=[common])
    for name, helptext, handler in (
        ("ls", "list cached stage runs", commands.cmd_cache_ls),
        ("verify", "re-hash every object and report damage", commands.cmd_cache_verify),
        ("gc", "remove what no given recipe's lock file references", commands.cmd_cache_gc),
        (
            "adopt",
            "sign with the team key the records this machine wrote before the key was set",
            commands.cmd_cache_adopt,
        ),
        (
            "push",
            "upload what the recipes' lock files reference (everything, with no recipe) to the remote",
            commands.cmd_cache_push,
        ),
        (
            "pull",
            "download what the recipes' lock files reference from the remote",
            commands.cmd_cache_pull,
        ),
    ):
        action = cache_sub.add_parser(name, help=helptext)
        action.add_argument(
            "recipes",
            nargs="*",
            type=Path,
            help=_RECIPES_HELP.get(name, "a recipe whose cache to use"),
        )
        action.add_argument(
            "--cache", type=Path, metavar="DIR", help="artifact store (default: as for run)"
        )
        action.set_defaults(handler=handler)
        _cache_options(name, action)
    add_trust_commands(cache_sub, _REMOTE_HELP)


_RECIPES_HELP = {
    "gc": "recipes whose lock files say what to keep",
    "push": "recipes whose lock files say what to upload",
    "pull": "recipes whose lock files say what to download",
}
_REMOTE_HELP = "the remote (s3://bucket/prefix, file:///mnt/share; default: $ORTFLOW_REMOTE, else `remote:` in ortflow.yaml)"


def _cache_options(name: str, action: argparse.ArgumentParser) -> None:
    if name == "ls":
        _json_option(action)
    if name == "verify":
        action.add_argument(
            "--remove", action="store_true", help="delete damaged entries so they rebuild"
        )
        action.add_argument(
            "--remote",
            nargs="?",
            const="",
            metavar="URL",
            help="check the remote instead: " + _REMOTE_HELP,
        )
    if name == "gc":
        action.add_argument(
            "--dry-run",
            action="store_true",
            help="list what would go, and how many MB, removing nothing",
        )
    if name in ("push", "pull"):
        action.add_argument("--remote", metavar="URL", help=_REMOTE_HELP)
    if name in ("push", "pull", "verify"):
        add_allow_unsigned(action)


@redacted_output()  # every line printed, tracebacks included, passes the one secret redactor
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    _complete(parser)
    args = parser.parse_args(argv)
    for flag in ("debug", "quiet", "verbose"):
        setattr(args, flag, getattr(args, flag, False))
    from ortflow.engine.cli.console import Output as Console
    from ortflow.engine.cli.console import broken_pipe

    out: Output = Console(quiet=args.quiet, debug=args.debug, verbose=args.verbose)
    try:
        from ortflow.engine.cli.recipe_discovery import resolve

        resolve(args)  # no recipe named: the one this folder means
        _check_keys(args)
        return int(args.handler(args, out) or EXIT_OK)
    except (
        BrokenPipeError
    ):  # a plain print (`engine dag | head`) found the reader gone; rich's writes end alike
        broken_pipe()
    except (
        StageError
    ) as exc:  # a stage's verdict belongs in its outcome: one that got here is an engine bug
        return _internal_error(out, args, exc)
    except OrtflowError as exc:
        out.error(str(exc))
        if args.debug:
            out.traceback()
        return exc.exit_code
    except KeyboardInterrupt:
        out.error(interrupted(args))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(
            EXIT_INTERRUPTED
        )  # stage threads hold no state worth waiting for: their work folders are discarded
    except Exception as exc:  # noqa: BLE001 - boundary: CLI; an engine bug is said plainly, traceback only when asked
        return _internal_error(out, args, exc)
    finally:
        out.close()


def _internal_error(out: Output, args: argparse.Namespace, exc: Exception) -> int:
    """An error ortflow did not explain: a full disk said as the machine's (exit 5), anything else as a bug in
    ortflow (exit 4), its traceback only under --debug."""
    full = no_space(exc)
    if full is not None:  # the machine, not ortflow: say which disk
        written = full.filename2 or full.filename  # a copy's error names its source first
        out.error(no_space_message(written or "the current folder"))
        return EXIT_NO_SPACE
    out.error(
        f"internal error (a bug in ortflow): {type(exc).__name__}: {exc} — run with --debug for the traceback"
    )
    if args.debug:
        out.traceback()
    return EXIT_INTERNAL


# Commands that read or write signed records: a key variable that cannot be used is refused before they start
# (exit 2, nothing ran), not halfway through a run as a stage's failure.
KEYED = ("run", "plan", "status", "cache")


def _check_keys(args: argparse.Namespace) -> None:
    if args.command in KEYED and getattr(args, "cache_command", None) != "key":
        from ortflow.engine.store.team_keys import verifying_keys

        verifying_keys()


def interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C left, in the words of the command it stopped."""
    action = getattr(args, "cache_command", None)
    if args.command == "run":
        return "interrupted: finished stages are cached; run the same command again to resume"
    if action in ("push", "pull"):
        return (
            f"interrupted: the {action} stopped; what was transferred landed whole (nothing partial is kept) "
            f"— run the same command again to {action} the rest"
        )
    if action == "sign":
        return "interrupted: records signed so far stay signed — run the same command again to sign the rest"
    return "interrupted: stopped before it finished — run the same command again"


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion (argcomplete): a no-op unless the shell's completion hook called us."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)
