"""The command line (`engine`, also installed as `ortflow`): the top floor. Thin commands over the library verbs
(ortflow.engine.pipeline and below) and everything that prints: the console, its tables, the listings.

Layers inside, top to bottom (pyproject's import-linter contracts): app (the parser and the one boundary that turns
errors into exit codes) -> the commands -> the console and its tables -> what they show. Nothing below the CLI
imports it. `main` is here so the console scripts and `python -m ortflow.engine.cli` keep their one spelling;
it imports the parser only when called, so importing one CLI module does not load them all."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """The console scripts' entry point (pyproject's [project.scripts]): ortflow.engine.cli.app.main."""
    from ortflow.engine.cli.app import main as app_main

    return app_main(argv)
