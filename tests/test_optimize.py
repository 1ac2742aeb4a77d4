"""`engine optimize MODEL -o OUT.onnx` on the quickstart's model (paraphrase-MiniLM-L3-v2): the chosen model
copied out with its speedup said, the recipe kept, a second call served from the cache, and an accuracy
nobody can meet refused with exit 3 and by how much the closest candidate missed. Piped and in a terminal."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest
from conftest import in_a_terminal, minilm_model


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One artifact store for this module's runs: the strict call re-uses the candidates the first one built
    (only `pick` differs), whichever test runs first."""
    return str(tmp_path_factory.mktemp("cache"))


SAID = re.compile(  # the closing line, wrapped wherever the terminal's width puts it
    r"fast\.onnx: 'int8\w*', ([0-9.]+)x the original's speed .* cosine_mean\s+([0-9.]+) >= 0\.99",
    re.DOTALL,
)


def test_optimize_copies_the_fastest_accurate_model_and_a_second_call_is_cached(
    project, cli, shared_cache
):
    code, out, err = cli(
        "optimize", minilm_model(), "-o", project / "fast.onnx", "--cache", shared_cache
    )
    assert code == 0, (out, err)
    said = SAID.search(out)
    assert said and float(said.group(1)) > 1.0 and float(said.group(2)) >= 0.99, out
    assert "recipe kept: " in out and (project / "fast.recipe.yaml").exists()
    session = ort.InferenceSession(str(project / "fast.onnx"), providers=["CPUExecutionProvider"])
    ids = np.ones((1, 16), dtype=np.int64)
    assert session.run(None, {"input_ids": ids, "attention_mask": ids})[3].shape == (1, 384)

    code, out, err = cli(
        "optimize", minilm_model(), "-o", project / "fast.onnx", "--cache", shared_cache
    )
    assert code == 0, (out, err)
    rows = [line for line in out.splitlines() if re.match(r"│ \w+ +│ (ran|cached) ", line)]
    assert len(rows) == 6 and all(" cached " in r for r in rows), out
    assert SAID.search(out), out


def test_an_accuracy_no_candidate_meets_exits_3_saying_by_how_much(project, cli, shared_cache):
    code, out, err = cli(
        "optimize",
        minilm_model(),
        "-o",
        project / "strict.onnx",
        "--min-accuracy",
        "0.99999",
        "--cache",
        shared_cache,
    )
    assert code == 3, (out, err)
    message = re.search(
        r"no model faster than the original met cosine_mean >= 0\.99999: the closest, '(\w+)' \(([0-9.]+)x\), "
        r"scored ([0-9.]+), ([0-9.]+) short",
        err,
    )
    assert message, err
    assert float(message.group(4)) == pytest.approx(0.99999 - float(message.group(3)), abs=2e-4)
    assert not (project / "strict.onnx").exists()


def test_optimize_refuses_a_recipe_edited_by_hand(project, cli):
    recipe = project / "mine.yaml"
    recipe.write_text("# my own\n")
    code, out, err = cli(
        "optimize", minilm_model(), "-o", project / "x.onnx", "--save-recipe", recipe
    )
    assert code == 2 and "differs from what `engine init` writes" in err, (out, err)
    assert recipe.read_text() == "# my own\n"


def test_init_and_optimize_in_a_terminal(project, shared_cache):
    code, shown = in_a_terminal(project, "init", str(minilm_model()), "-o", "r.yaml")
    assert (
        code == 0
        and "wrote r.yaml: a transformer encoder" in shown
        and "next: engine run r.yaml" in shown
    ), shown
    code, shown = in_a_terminal(
        project, "optimize", str(minilm_model()), "-o", "fast.onnx", "--cache", shared_cache
    )
    assert code == 0, shown
    assert (
        "fast.onnx: 'int8" in shown
        and "x the original's speed" in shown
        and "recipe kept: fast.recipe.yaml" in shown
    ), shown


def _selection(folder, data: dict, *candidates: tuple[str, float, float, bool]) -> None:
    """select's document as `pick` writes it: (id, p50_ms, cosine_mean, meets the constraint) per candidate."""
    from ortflow.api import Bounds, DataSource, Selection, SelectionCandidate, write_document

    best = min((c for c in candidates if c[3]), key=lambda c: c[1])[0]
    rows = [
        SelectionCandidate(
            name,
            name,
            {},
            {"p50_ms": p50, "speedup": 2.0 / p50, "cosine_mean": cosine},
            meets,
            [] if meets else ["cosine_mean below min"],
            False,
            name == best,
        )
        for name, p50, cosine, meets in candidates
    ]
    folder.mkdir()
    write_document(
        folder / "selection.json",
        Selection(
            "minimize",
            "p50_ms",
            Bounds({"cosine_mean": 0.99}),
            DataSource.from_json(data),
            best,
            rows,
            {"tables": []},
        ),
    )


def _pick_files(folder):
    """Where `pick` (select) published its choice, found as optimize finds it: through select's declared ports."""
    from ortflow.engine.contracts.builds import RunOutput, RunRecord
    from ortflow.engine.contracts.registry import stage_type
    from ortflow.engine.contracts.types import StageOutcome, Status
    from ortflow.engine.starter.optimize import choice_files

    selection = RunOutput("0" * 64, "metrics", "selection.json", 1)
    record = RunRecord("0" * 64, folder.name, "select", "3", {}, {}, {}, {"selection": selection})
    return choice_files(
        stage_type("select"), StageOutcome(folder.name, Status.RAN, record=record), folder.parent
    )


def _record(stage: str, stage_type: str):
    """A run record of a stage that published no output (only its identity is filled in)."""
    from ortflow.engine.contracts.builds import RunRecord

    return RunRecord("0" * 64, stage, stage_type, "1", {}, {}, {}, {})


def test_optimize_reads_the_choice_through_the_ports_a_stage_type_declares(tmp_path):
    """optimize read `<pick>/selection.json` and `<pick>/model.onnx` by name; now the stage type declares which of
    its outputs hold the choice (Stage.declares.choice), so a choosing stage with other file names works too."""
    from ortflow.api import ArtifactKind, Choice, Declares, Port, Stage
    from ortflow.engine.contracts.types import StageOutcome, Status
    from ortflow.engine.leaves.errors import OrtflowError
    from ortflow.engine.starter.optimize import choice_files

    class Picker(Stage):
        type = "picker"
        outputs = (
            Port(
                "best",
                ArtifactKind.ONNX_MODEL,
                "the chosen model",
                filename="best.onnx",
                optional=True,
            ),
            Port("why", ArtifactKind.METRICS, "every candidate", filename="why.json"),
        )
        declares = Declares(choice=Choice(model="best", document="why"))

    files = choice_files(
        Picker, StageOutcome("choose", Status.RAN, record=_record("choose", "picker")), tmp_path
    )
    assert (files.document, files.model) == (
        tmp_path / "choose" / "why.json",
        tmp_path / "choose" / "best.onnx",
    )
    assert _pick_files(tmp_path / "pick").document == tmp_path / "pick" / "selection.json"

    class Silent(Stage):
        type = "silent"

    with pytest.raises(OrtflowError, match="declares no choice"):
        choice_files(Silent, StageOutcome("choose", Status.RAN), tmp_path)


def test_the_closing_words_say_why_the_original_was_kept_and_never_ask_for_data_already_given(
    tmp_path,
):
    """An OCR detector's INT8 was slower and less accurate: optimize said "no optimized candidate was faster
    (cosine_mean >= 0.99 held)", as if the candidate had held it; and a miss on real data was told to "give real
    data with --data". Now each candidate's speed and score are named, and the advice fits the data."""
    from ortflow.engine.starter.optimize import NothingQualified, read_choice

    real = {"provenance": "real", "loader": "images", "paths": ["photos"]}
    _selection(tmp_path / "kept", real, ("model", 2.0, 1.0, True), ("int8", 2.2, 0.918, False))
    kept = read_choice(_pick_files(tmp_path / "kept"), "cosine_mean", 0.99)
    assert (kept.chosen, kept.others) == ("model", ("'int8' 0.91x, cosine_mean 0.9180 < 0.99",))
    _selection(tmp_path / "missed", real, ("model", 2.0, 1.0, True), ("int8", 1.0, 0.95, False))
    with pytest.raises(NothingQualified) as missed:
        read_choice(_pick_files(tmp_path / "missed"), "cosine_mean", 0.99)
    assert "lower --min-accuracy (every candidate" in str(missed.value) and "--data" not in str(
        missed.value
    )
    _selection(
        tmp_path / "random",
        {"provenance": "random", "loader": "random"},
        ("model", 2.0, 1.0, True),
        ("int8", 1.0, 0.95, False),
    )
    with pytest.raises(NothingQualified, match="or give real data with --data"):
        read_choice(_pick_files(tmp_path / "random"), "cosine_mean", 0.99)
