"""`engine doctor`: this machine as a bug report should describe it, piped, as JSON and under a terminal.
The GPU branch runs against a stand-in `nvidia-smi` on PATH that answers as the real one does on an H100."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import in_a_terminal

# What nvidia-smi 550 prints on an H100 SXM host, for a --query-gpu and for its plain table's header.
H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "driver_version": "550.54.15",
    "memory.total": "81559 MiB",
    "compute_cap": "9.0",
}
HEADER = """Thu Nov 26 17:30:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+"""
SECRET = "s3cr3tKeyValue" * 3  # a team key of the length one needs


def stand_in_nvidia_smi(folder: Path) -> Path:
    """An `nvidia-smi` that answers --query-gpu=FIELDS with the H100's values in the order asked."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    values = json.dumps(H100)
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"values = {values}\n"
        "query = [a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--query-gpu=')]\n"
        "if query:\n"
        "    print(', '.join(values[f] for f in query[0].split(',')))\n"
        "else:\n"
        f"    print({HEADER!r})\n"
    )
    script.chmod(0o755)
    return folder


def doctor(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ORTFLOW_")}
    return subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "doctor", *args],
        cwd=project,
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_piped_it_names_software_providers_cpu_and_cache_and_hides_secrets(project):
    (project / ".ortflow" / "objects").mkdir(parents=True)
    (project / ".ortflow" / "objects" / "x").write_bytes(b"0" * 2_000_000)
    done = doctor(
        project,
        ORTFLOW_REMOTE=f"s3://AKIDEXAMPLE:{SECRET}@team-bucket/ortflow",
        ORTFLOW_SIGNING_KEY=SECRET,
        PATH=os.path.dirname(sys.executable) + ":/usr/bin:/bin",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert SECRET not in out + done.stderr
    for expected in (
        "python ",
        "onnxruntime ",
        "CPUExecutionProvider: usable",
        "INT8 kernel family: ",
        "2.0 MB in 1 files",
        "s3://***@team-bucket/ortflow (from $ORTFLOW_REMOTE)",
        "team key ($ORTFLOW_SIGNING_KEY): set, fingerprint ",
        "ORTFLOW_SIGNING_KEY=(set, hidden)",
    ):
        assert expected in out, expected
    # a GPU provider this build lists is said to be unusable, with why (no driver here: no nvidia-smi)
    assert "CUDAExecutionProvider: not usable: no NVIDIA driver" in out
    assert "gpu          none (no nvidia-smi" in out


def test_json_names_the_int8_kernel_family_that_keys_a_native_target(project):
    vnni_host = "fma,avx2,avx512f,avx512dq,avx512bw,avx512vl,avx512_vnni,avx_vnni"
    done = doctor(project, "--json", ORTFLOW_ISA=vnni_host)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["cpu"]["int8_kernel_family"] == "x86_64: avx512-vnni"
    assert found["cpu"]["forced_by"] == f"$ORTFLOW_ISA={vnni_host}"
    assert "vpdpbusd" in found["cpu"]["int8_kernels"]
    assert {p["name"] for p in found["providers"]} >= {"CPUExecutionProvider"}


def test_the_gpu_branch_reads_nvidia_smi(project, tmp_path):
    bin_dir = stand_in_nvidia_smi(tmp_path / "bin")
    path = f"{bin_dir}:{os.environ['PATH']}"
    done = doctor(project, PATH=path)
    assert done.returncode == 0, done.stderr
    assert "NVIDIA H100 80GB HBM3, 81559 MiB, compute 9.0, driver 550.54.15" in done.stdout
    assert "CUDA: driver supports 12.4; runtime: " in done.stdout
    found = json.loads(doctor(project, "--json", PATH=path).stdout)
    assert found["gpu"]["devices"] == [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "driver": "550.54.15",
            "memory": "81559 MiB",
            "compute_capability": "9.0",
        }
    ]
    assert found["gpu"]["cuda_driver"] == "12.4"


def test_under_a_terminal_it_prints_the_same_facts(project):
    code, shown = in_a_terminal(project, "doctor", size=(40, 100))
    assert code == 0
    assert "INT8 kernel family:" in shown and "CPUExecutionProvider: usable" in shown
