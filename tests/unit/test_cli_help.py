"""The parser's answers to a wrong command line (engine.cli.cli_help): "did you mean" for commands, choices and
options, usage that shows RECIPE and STAGE as optional, and --help ending with where to start. In-process and
without a recipe: milliseconds each."""

from __future__ import annotations

import pytest

from ortflow.engine.cli.app import build_parser, main


def refused(capsys, *argv: str) -> str:
    """What `engine ARGV` says on stderr; it must exit 2 (a usage error) before running anything."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_a_typo_d_command_is_named(capsys):
    err = refused(capsys, "rnu")
    assert "invalid choice: 'rnu' — did you mean 'run'?" in err and "choose from" not in err


def test_a_typo_d_option_of_the_command_is_named(capsys):
    assert "did you mean '--dry-run'?" in refused(capsys, "cache", "gc", "--dry-rn")
    err = refused(capsys, "run", "recipe.yaml", "--jbos", "2")
    assert err.startswith("usage: engine run ") and "did you mean '--jobs'?" in err


def test_an_option_of_another_command_says_whose_it_is(capsys):
    err = refused(capsys, "run", "--forse")
    assert "`engine run` has no such option" in err and "`engine init --force`" in err


def test_a_typo_d_choice_is_named(capsys):
    assert "invalid choice: 'dsk' — did you mean 'dask'?" in refused(
        capsys, "run", "--executor", "dsk"
    )


def test_commands_registered_later_are_suggested_too(capsys):
    """A command added to the parser (a plugin's, say) is suggested too: the suggestions read the parser,
    not a list."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    sub.add_parser("lint-recipes", help="a command registered after the built-in ones")
    with pytest.raises(SystemExit):
        parser.parse_args(["lint-recipe"])
    assert "did you mean 'lint-recipes'?" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "plan"])
def test_usage_shows_recipe_and_stages_as_optional(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "[RECIPE] [STAGE ...]" in out and "required" not in out


def test_help_ends_with_where_to_start(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out.strip()
    tail = out[out.index("where to start:") :].splitlines()
    assert (
        "docs/getting-started.md" in tail[-1] and "--version" in out[: out.index("where to start:")]
    )
    assert any("engine init MODEL.onnx" in line for line in tail)
    assert any("engine optimize MODEL.onnx -o fast.onnx" in line for line in tail)
    assert any("engine run recipes/quickstart.yaml" in line for line in tail)
