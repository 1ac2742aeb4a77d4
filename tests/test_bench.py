"""No bench script rots (issue 28): every script in bench/ runs in its quick mode (`--quick`: tiny runs on the
same code path, bench/quick.py) and must exit 0 without a traceback. A script that needs what this machine lacks
(a browser, a GPU) says `skipped: <why>` in one line and exits 0; the test reports that skip.

    pytest -m bench      # its own CI step (.ci/run), about 3 minutes on 2 busy cores; not in the everyday run
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
# imported by the scripts, not run on their own
HELPERS = {"corpus_feeds", "corpus_partial", "corpus_speed", "gpu_models", "quick"}
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in HELPERS)
LIMIT_S = 300  # one script's quick mode; each takes well under a minute when it works


@pytest.mark.bench
@pytest.mark.parametrize("script", SCRIPTS)
def test_quick_mode_runs(script, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    said = f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, said
    assert done.returncode == 0, f"bench/{script}.py --quick exited {done.returncode}\n{said}"
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped: ")]
    if skipped:
        pytest.skip(f"bench/{script}.py: {skipped[0].removeprefix('skipped: ')}")


def test_every_bench_script_has_a_quick_mode():
    """A new script without --quick would rot unnoticed: the bench step would only fail on it at CI time."""
    for script in SCRIPTS:
        text = (BENCH / f"{script}.py").read_text()
        assert "quick.add_flag(" in text or '"--quick" in argv' in text, (
            f"bench/{script}.py has no --quick (bench/quick.py)"
        )
    ci = (REPO / ".ci" / "run").read_text()
    assert "pytest -m bench" in ci


DEVICE = BENCH / "device" / "run.sh"
OUT_FILES = 8  # what the device tool brings back from $OUT, at most two folders down


def _wheel(folder: Path) -> Path:
    """A small real wheel (a module, its METADATA, WHEEL and RECORD), the kind of file the parts carry."""
    import base64
    import zipfile

    files = {
        "carried_probe.py": "SIZE = 1\n" + "# padding so the wheel splits into parts\n" * 400,
        "carried_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: carried-probe\nVersion: 1.0\n",
        "carried_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files["carried_probe-1.0.dist-info/RECORD"] = "\n".join(
        [*record, "carried_probe-1.0.dist-info/RECORD,,"]
    )
    wheel = folder / "carried_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def _carried_parts(tmp_path: Path, pieces: int = 3) -> tuple[Path, Path]:
    """A real wheel split into parts with its SHA256SUMS, as bench/README.md carries onnxruntime-gpu's."""
    wheel, parts = _wheel(tmp_path), tmp_path / "parts"
    parts.mkdir()
    data = wheel.read_bytes()
    step = -(-len(data) // pieces)
    for index in range(pieces):
        suffix = "a" + "abcdefghij"[index]
        (parts / f"{wheel.name}.part-{suffix}").write_bytes(data[index * step : (index + 1) * step])
    digest = hashlib.sha256(data).hexdigest()
    (parts / "SHA256SUMS").write_text(f"{digest}  {wheel.name}\n")
    return wheel, parts


def _device(tmp_path: Path, *args: str, parts: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PARTS": str(parts),
        "WORK": str(tmp_path / "work"),
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.run(
        ["bash", str(DEVICE), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )


@pytest.mark.bench
def test_the_device_script_dry_runs_every_step_it_can_without_a_gpu(tmp_path):
    """The CPU dry run of bench/device/run.sh: the parts joined and checked, installed with --target, ortflow's
    requirements, doctor, the GPU-only tests (skipping, saying why, where there is no GPU) and bench/gpu.py;
    exit 0, every step one line in summary.txt, and OUT small enough to come back from the device."""
    wheel, parts = _carried_parts(tmp_path)
    out = tmp_path / "out"
    done = _device(tmp_path, "--dry-run", str(out), parts=parts)
    said = f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == 0, said
    assert "Traceback (most recent call last)" not in (out / "run.log").read_text(), said
    summary = (out / "summary.txt").read_text().splitlines()
    assert not [line for line in summary if line.startswith("FAILED")], summary
    assert f"ok: join: {wheel.name} matches SHA256SUMS" in summary, summary
    # the joined wheel, installed with --target
    assert (tmp_path / "work" / "site" / "carried_probe.py").is_file()
    assert any(line.startswith("ok: engine doctor: CUDA provider: ") for line in summary), summary
    gpu = next(line for line in summary if "GPU tests" in line)
    assert gpu.startswith("ok: "), summary
    bench = next(line for line in summary if "bench/gpu.py" in line)
    assert bench.startswith(("ok: ", "skipped: ")), summary
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= OUT_FILES and all(len(p.relative_to(out).parts) <= 3 for p in files), files


def test_a_damaged_part_stops_the_device_script_before_anything_runs(tmp_path):
    _, parts = _carried_parts(tmp_path)
    last = sorted(parts.glob("*.part-*"))[-1]
    last.write_bytes(last.read_bytes()[:-1])  # a part cut short in its carrying
    done = _device(tmp_path, "--dry-run", str(tmp_path / "out"), parts=parts)
    assert done.returncode == 1, done.stdout + done.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text().splitlines()
    assert (
        summary[-1].startswith("FAILED: join: a file does not match")
        and "carry the parts again" in summary[-1]
    )
    assert not (tmp_path / "work" / "site").exists()  # nothing installed, nothing run


def test_keep_copies_one_call_s_parts_out_of_the_repo_and_wrong_arguments_say_how(tmp_path):
    _, carried = _carried_parts(tmp_path)
    kept = tmp_path / "kept"
    done = _device(tmp_path, "--keep", str(carried), parts=kept)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in kept.iterdir()) == sorted(p.name for p in carried.iterdir())
    for wrong in ((), ("--dry-run",), ("--keep",), ("a", "b")):
        done = _device(tmp_path, *wrong, parts=kept)
        assert done.returncode == 2 and done.stderr.startswith("usage: bash bench/device/run.sh"), (
            wrong
        )


@pytest.mark.parametrize("quick", [False, True])
def test_gpu_without_torch_says_what_is_missing_and_the_command_in_one_line(tmp_path, quick):
    """torch made unimportable the way Python itself does it (a None in sys.modules), the rest as installed."""
    run = (
        "import runpy, sys; sys.modules['torch'] = None; "
        f"sys.path.insert(0, {str(BENCH)!r}); "
        f"sys.argv = ['gpu.py', '--out', {str(tmp_path / 'out')!r}] + (['--quick'] if {quick} else []); "
        f"runpy.run_path({str(BENCH / 'gpu.py')!r}, run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT_S
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    said = done.stdout if quick else done.stderr
    [line] = [x for x in said.splitlines() if "bench/gpu.py needs" in x]
    assert "(torch not installed)" in line and 'pip install -e ".[torch]"' in line, line
    assert done.returncode == (0 if quick else 2) and (line.startswith("skipped: ") == quick)
