"""The docs stay true to the code: the README stays a front door, every page is reachable from it and every
link resolves, the stage reference is what the code generates, and every `engine ...` command the docs show
still parses. All of it reads files and parsers only: nothing runs."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS, ROOT / "bench" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```(\w*)\s*$")
SHELL = {"bash", "sh", "shell", "console"}


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < 200, f"README.md has {lines} lines: move the detail into docs/ and link it"


def test_the_readme_set_up_is_what_ci_runs():
    """The two set-up lines a newcomer pastes are the commands .ci/run executes, so CI proves they work."""
    ci = {
        line.split("#")[0].strip()
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    }
    setup = README.read_text(encoding="utf-8").split("## Set up", 1)[1]
    block = setup.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [part.strip() for line in block.splitlines() for part in line.split("&&")]
    assert len(commands) == 5 and not [c for c in commands if c not in ci], (
        f"README's set-up commands not in .ci/run: {commands}"
    )


def test_every_docs_page_is_linked_from_the_readme():
    linked = {
        (README.parent / target.split("#")[0]).resolve()
        for target in LINK.findall(README.read_text(encoding="utf-8"))
    }
    missing = [page.name for page in DOCS if page.resolve() not in linked]
    assert DOCS and not missing, (
        f"README.md links no docs page named {missing}: add each to 'Where to go next'"
    )


def anchors(page: Path) -> set[str]:
    """The `#fragment` each heading of a Markdown page gets on GitHub (code blocks' `# comments` are no headings)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= bool(FENCE.match(line))
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    broken = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # a web address
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path) if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(
                    f"{page.relative_to(ROOT)}:{number}: {target} (no such heading in {path or 'this page'})"
                )
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_the_stage_reference_is_what_the_code_generates():
    from ortflow.engine.cli.stage_reference import render

    assert (ROOT / "docs" / "stages.md").read_text(encoding="utf-8") == render(), (
        "docs/stages.md is stale — run: python -m ortflow.engine.cli.stage_reference docs/stages.md"
    )


def test_the_generator_rewrites_a_stale_page_and_check_says_so(tmp_path, capsys):
    from ortflow.engine.cli.stage_reference import main

    page = tmp_path / "stages.md"
    page.write_text("# an old reference\n")
    assert (
        main(["--check", str(page)]) == 1
        and "is stale — run: python -m ortflow.engine.cli.stage_reference"
        in capsys.readouterr().err
    )
    assert main([str(page)]) == 0 and main(["--check", str(page)]) == 0


def shell_commands(page: Path) -> list[tuple[int, str]]:
    """(line, command) for each command line in the page's fenced shell blocks; a line ending in `\\` goes on."""
    found: list[tuple[int, str]] = []
    language, pending, start = None, "", 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language = None if language is not None else fence.group(1)
            continue
        if language not in SHELL:
            continue
        start = start if pending else number
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            found.append((start, pending.strip()))
            pending = ""
    return found


def engine_invocations(command: str) -> list[list[str]]:
    """The arguments of every `engine`/`ortflow` call in a shell line (`a && engine run x | head` included)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    calls, words = [], []
    for token in [*lexer, ";"]:
        if token in {"&&", "||", "|", ";", "&", "(", ")"}:
            while words and re.match(r"\w+=", words[0]):  # VAR=value engine ...
                words.pop(0)
            if words and words[0] in ("engine", "ortflow"):
                calls.append(words[1:])
            words = []
        else:
            words.append(token)
    return calls


def test_the_command_finder_sees_chained_and_continued_commands(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\npip install x && engine run r.yaml   # a comment\nengine plan r.yaml \\\n  --json | head\n```\n"
        "```yaml\nengine: not a command\n```\n"
    )
    assert [(n, engine_invocations(c)) for n, c in shell_commands(page)] == [
        (2, [["run", "r.yaml"]]),
        (3, [["plan", "r.yaml", "--json"]]),
    ]


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_engine_command_in_the_docs_parses(page):
    from ortflow.engine.cli.app import build_parser

    parser, bad = build_parser(), []
    for number, command in shell_commands(page):
        if not re.search(r"\b(engine|ortflow) ", command):
            continue
        try:
            calls = engine_invocations(command)
        except ValueError as exc:  # an unclosed quote: not a shell line anyone can paste
            bad.append(f"{page.relative_to(ROOT)}:{number}: {command} — {exc}")
            continue
        for words in calls:
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                    parser.parse_args(words)
            except SystemExit as exit_:
                if exit_.code:
                    message = stderr.getvalue().strip().splitlines()[-1:] or [""]
                    bad.append(
                        f"{page.relative_to(ROOT)}:{number}: engine {' '.join(words)} — {message[0]}"
                    )
    assert not bad, "commands the CLI no longer accepts:\n" + "\n".join(bad)
