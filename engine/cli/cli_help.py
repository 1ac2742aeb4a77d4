"""What the argument parser says when a command line is wrong, the way git and pip say it: a typo'd
command, option or choice gets "did you mean", and `engine --help` ends with where to start.

The suggestions read the parser itself (the registered subcommands and each one's options), so a command
added to engine.cli is offered without being listed here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from ortflow.engine.leaves.errors import suggest

WHERE_TO_START = """\
where to start:
  engine run recipes/quickstart.yaml       the quickstart: a real model optimized, timed and checked
  engine init MODEL.onnx                   write a commented recipe for your model, then `engine run` it
  engine optimize MODEL.onnx -o fast.onnx  the fastest model that keeps its accuracy, in one command
  engine run                               run the recipe in this folder (or `recipe:` in ortflow.yaml)

docs: docs/getting-started.md, and every command and exit code in docs/cli.md"""


RECIPE_HELP = "the recipe YAML file (default: `recipe:` in ./ortflow.yaml, else the one recipe in this folder)"


def top_parser(description: str, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`engine`'s parser: did-you-mean on every subcommand (they are made of its class), where to start last."""
    return Parser(
        prog=program(),
        description=description,
        parents=[common],
        epilog=WHERE_TO_START,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def stages_argument(parser: argparse.ArgumentParser, text: str) -> None:
    """`[STAGE ...]` after an optional RECIPE: a first word that is no file is a stage (engine.cli.recipe_discovery)."""
    parser.add_argument("stages", nargs="*", metavar="STAGE", help=text)


COMMANDS = ("engine", "ortflow")  # pyproject's [project.scripts]: the names a user types


def program() -> str:
    """`engine` or `ortflow` as typed; `engine` otherwise: under `python -m ortflow.engine.cli` argparse would say
    `cli.py`, and under another program that calls main() (a test runner, a notebook) that program's name."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name in COMMANDS else "engine"


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for commands, choices and options (subparsers are made of this class too)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own hook for `choices` (subcommands included): a close value is named instead of the list
        if action.choices is not None and value not in action.choices:
            hint = suggest(str(value), [str(choice) for choice in action.choices])
            if hint:
                raise argparse.ArgumentError(action, f"invalid choice: {value!r} — {hint}")
        super()._check_value(action, value)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            _unrecognized(self, parsed, extras)
        return parsed


def _unrecognized(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace, extras: list[str]
) -> NoReturn:
    """Exit 2 from the subcommand's parser (its usage line), naming the option meant where one is close."""
    chain = _chosen(parser, parsed)
    command = chain[-1]
    text = f"unrecognized arguments: {' '.join(extras)}"
    typo = next((word.split("=", 1)[0] for word in extras if word.startswith("--")), None)
    if typo is not None:
        text += f" — {_option_hint(parser, command, typo)}"
    command.error(text)


def _option_hint(
    parser: argparse.ArgumentParser, command: argparse.ArgumentParser, typo: str
) -> str:
    """The command's own option closest to `typo`, else the command(s) whose option it is close to."""
    close = _closest(typo, _options(command))
    if close is not None:
        return f"did you mean '{close}'?"
    owners = _owners(parser, typo)
    if owners:
        shown = ", ".join(f"`engine {owner} {option}`" for owner, option in owners)
        return f"`{command.prog}` has no such option; close: {shown}"
    return f"see `{command.prog} --help`"


def _closest(typo: str, options: list[str]) -> str | None:
    """Compared without the dashes: `--forse` is nearer `--force` than `--set`."""
    long = {option.lstrip("-"): option for option in options if option.startswith("--")}
    hint = suggest(typo.lstrip("-"), list(long))
    return None if hint is None else long[hint.split("'")[1]]


def _chosen(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace
) -> list[argparse.ArgumentParser]:
    """The parser, and the subcommand parsers the command line chose (`cache`, then `cache gc`)."""
    chain = [parser]
    while (sub := _subparsers(chain[-1])) is not None:
        name = getattr(parsed, sub.dest, None)
        if name not in sub.choices:
            break
        chain.append(sub.choices[name])
    return chain


def _subparsers(parser: argparse.ArgumentParser) -> Any:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings]


def _owners(parser: argparse.ArgumentParser, typo: str, prefix: str = "") -> list[tuple[str, str]]:
    """The subcommands (`init`, `cache verify`) with an option close to `typo`, and that option."""
    sub = _subparsers(parser)
    if sub is None:
        return []
    owners = []
    for name, child in sub.choices.items():
        close = _closest(typo, _options(child))
        if close is not None:
            owners.append((prefix + name, close))
        owners.extend(_owners(child, typo, f"{prefix}{name} "))
    return owners
