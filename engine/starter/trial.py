"""`engine init` never hands over a recipe it has not seen run: before writing, the float model runs (ORT, CPU,
sequential, one sample) on the first feed of the calibration dataset the recipe declares, built by the same
loader from the same parameters. Where random feeds fail, the sizes init guessed for open dims are tried
again one at a time (1; the size of the same axis in another input; another input's batch), and the recipe
says which ran and why; where nothing runs, init refuses, naming the input, the shapes tried and ORT's message."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ortflow.engine.contracts.dataset import Dataset, Feed, model_inputs
from ortflow.engine.contracts.params import fill_defaults, schema_problems
from ortflow.engine.contracts.registry import DATASETS, installed
from ortflow.engine.leaves.errors import OrtflowError, StageError
from ortflow.engine.leaves.yamlsource import parse_yaml
from ortflow.engine.ort.onnx_model import first_line, ort_errors
from ortflow.engine.starter.data import DataKind, DatasetChoice, flow, image_axes
from ortflow.engine.starter.roles import InputRole, ModelRoles
from ortflow.engine.starter.sizes import SizeGuess, resolved_shape

MAX_TRIALS = (
    12  # runs after the first: a model whose single run is slow is fine, a loop over it is not
)
IMAGE_SIDES = (48, 32, 64, 224)  # tried for an open image axis before 1
TIME_BUDGET_S = 60.0  # seconds of further tries once the proposed feeds failed


_IMAGE_FIX = (
    ": for a 1-channel model, --channels gray (--channels BGR for BGR pixels); for another size, `size:` "
    "in the recipe; or give an .npz of the model's inputs (--data FILE.npz, one array per input)"
)

_SOURCE_PREFIX = re.compile(
    r"^\S+\.(?:h|cc|cpp):\d+ (?:[\w:~]+(?:\([^)]*\))? )?"
)  # ORT's `file.h:91 Class::fn(args) `


def _innermost(message: str) -> str:
    """ORT nests a failure inside If/Loop nodes as `Status Message: ...` repeatedly: the last one says what broke."""
    said = message.split("Status Message:")[-1].strip() if "Status Message:" in message else message
    return re.sub(r"\s+", " ", _SOURCE_PREFIX.sub("", said))[:300]


@dataclass(frozen=True)
class Attempt:
    shapes: dict[str, list[int]]  # the feed's shape, per input
    error: str | None  # None: it ran
    produced: dict[str, list[int]] = field(default_factory=dict)  # the outputs' shapes, when it ran


class Trial:
    """One ORT session on the float model, run on one feed of a dataset choice at a time."""

    def __init__(self, model: Path, folder: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 4  # ORT's own log would repeat the failure it raises
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        self.model, self.folder = model, folder
        try:
            self.session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except ort_errors() as exc:
            raise OrtflowError(
                f"{model.name}: ONNX Runtime (CPU) cannot load the model, so init cannot check the recipe it "
                f"would write: {_innermost(first_line(exc))} — check the file (re-export it), or write the "
                "recipe by hand"
            ) from exc
        self.inputs = model_inputs(model)

    def dataset(self, choice: DatasetChoice) -> Dataset:
        """The dataset the recipe declares: its parameters as the recipe's text says them, defaults filled and
        files resolved against the recipe's folder, read by the loader the recipe names."""
        loader_cls = installed(DATASETS).get(choice.loader)
        params, _ = parse_yaml(flow(choice.params), "engine init's dataset parameters")
        problems = schema_problems(params, loader_cls.params_schema)
        if (
            problems
        ):  # init built parameters its own loader refuses: a bug, said with what was wrong
            raise OrtflowError(
                f"engine init wrote {choice.loader} parameters the loader refuses: {'; '.join(problems)}"
            )
        for name in loader_cls.file_params:
            if isinstance(params.get(name), str):
                params[name] = self.folder / params[name]
        return Dataset(
            "calibration",
            loader_cls(),
            fill_defaults(params, loader_cls.params_schema),
            "",
            "engine init's trial run",
        )

    def run(self, choice: DatasetChoice) -> Attempt:
        try:
            feed = next(iter(self.dataset(choice).feeds(self.inputs, limit=1)))
        except StageError as exc:
            return Attempt({}, str(exc))
        shapes = {name: list(array.shape) for name, array in feed.items()}
        try:
            results = self.session.run(None, feed)
        except ort_errors() as exc:
            return Attempt(shapes, _innermost(str(exc)))
        names = [o.name for o in self.session.get_outputs()]
        return Attempt(shapes, None, {n: list(r.shape) for n, r in zip(names, results)})

    def feeds(self, choice: DatasetChoice, count: int) -> list[Feed]:
        """The first `count` feeds of the dataset the recipe declares."""
        return list(self.dataset(choice).feeds(self.inputs, limit=count))


def _alternatives(
    roles: ModelRoles, guesses: dict[str, SizeGuess], guess: SizeGuess
) -> list[tuple[int, str]]:
    """Other sizes worth a try for one guess, each with why: 1; the same axis's size in another input; the
    batch another input declares or was given."""
    found: list[tuple[int, str]] = []
    mine = {name for name, _ in guess.axes}
    spatial = {
        (i.fact.name, axis)
        for i in roles.inputs
        if i.role == InputRole.IMAGE
        for axis in image_axes(i)
    }
    if spatial & set(guess.axes):
        found += [
            (side, "a common image side (text-line recognizers take 48 or 32 high)")
            for side in IMAGE_SIDES
        ]
    found.append((1, "the smallest size"))
    for name, axis in guess.axes:
        for info in roles.inputs:
            if info.fact.name in mine:
                continue
            shape = resolved_shape(info, guesses)
            if axis < len(shape):
                found.append((shape[axis], f"the size of axis {axis} in '{info.fact.name}'"))
            if info.batch_axis is not None and info.batch_axis < len(shape):
                found.append((shape[info.batch_axis], f"the batch of '{info.fact.name}'"))
    seen = {guess.size}
    unique = []
    for size, why in found:
        if size > 0 and size not in seen:
            seen.add(size)
            unique.append((size, why))
    return unique


def seen_running(
    roles: ModelRoles,
    choice: DatasetChoice,
    folder: Path,
    rebuild: Callable[[dict[str, int]], DatasetChoice],
) -> DatasetChoice:
    """`choice` once the float model has run on its first feed, or a random choice with other sizes that
    ran (`rebuild` makes one from {guess key: size}); OrtflowError when nothing ran."""
    trial = Trial(roles.facts.path, folder)
    first = trial.run(choice)
    if first.error is None:
        return replace(choice, produced=first.produced)
    if choice.kind != DataKind.RANDOM:
        raise OrtflowError(
            f"{roles.facts.path.name} does not run on the first sample of --data ({_shapes(first.shapes)}): "
            f"{first.error} — give data shaped as the model takes it (its inputs: "
            f"{', '.join(i.fact.describe() for i in roles.inputs)})"
            + (_IMAGE_FIX if choice.kind == DataKind.IMAGES else "")
        )
    attempts, started = [first], time.monotonic()
    batch_axes = {(i.fact.name, i.batch_axis) for i in roles.inputs}
    for key, guess in choice.guesses.items():
        if all(axis in batch_axes for axis in guess.axes):
            continue  # a batch of one is what every stage feeds first; other batches change no shape rule
        for size, why in _alternatives(roles, choice.guesses, guess):
            if len(attempts) > MAX_TRIALS or time.monotonic() - started > TIME_BUDGET_S:
                raise _refuse(roles, attempts)
            candidate = rebuild({key: size})
            attempt = trial.run(candidate)
            attempts.append(attempt)
            if attempt.error is None:
                return replace(_ran(candidate, guess, size, why, first), produced=attempt.produced)
    raise _refuse(roles, attempts)


def _ran(
    candidate: DatasetChoice, guess: SizeGuess, size: int, why: str, first: Attempt
) -> DatasetChoice:
    where = guess.key if guess.named else guess.key.replace(" axis ", "'s axis ")
    note = (
        f"{where} = {size} ({why}): the first guess, {guess.size}, failed in ONNX Runtime ({first.error}); "
        f"with {size} the float model ran"
    )
    return replace(
        candidate, comments=[*candidate.comments, note], remarks=[*candidate.remarks, note]
    )


def _shapes(shapes: dict[str, list[int]]) -> str:
    return ", ".join(f"{name} {shape}" for name, shape in shapes.items()) or "no feed"


def _refuse(roles: ModelRoles, attempts: list[Attempt]) -> OrtflowError:
    opened = [i for i in roles.inputs if i.fact.symbolic_axes()]
    tried: dict[str, list[list[int]]] = {}
    for attempt in attempts:
        for info in opened:
            shape = attempt.shapes.get(info.fact.name)
            if shape is not None and shape not in tried.setdefault(info.fact.name, []):
                tried[info.fact.name].append(shape)
    said = "; ".join(
        f"{name} {' / '.join(map(str, shapes))}" for name, shapes in tried.items()
    ) or _shapes(attempts[0].shapes)
    return OrtflowError(
        f"{roles.facts.path.name} runs on none of the random feeds init can shape (tried {said}): "
        f"{attempts[0].error} — give real feeds with --data FILE.npz (one array per input: "
        f"{', '.join(i.fact.describe() for i in roles.inputs)})"
    )
