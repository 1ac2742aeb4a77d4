"""What a model's inputs and outputs likely mean, from their names, dtypes, shapes and the ops around them:
token ids or an image, a recurrent state or a sample rate; an embedding, class scores or a detection head.
These are guesses, and the recipe `engine init` writes says each one in a comment so a user can correct it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ortflow.engine.ort.model_facts import ModelFacts, TensorFact


class InputRole(enum.Enum):
    TOKEN_IDS = "token ids"
    ATTENTION_MASK = "attention mask"
    TOKEN_TYPES = "token type ids"
    IMAGE = "image"
    AUDIO = "audio samples"
    STATE = "recurrent state"
    SCALAR = "scalar"
    FEATURES = "features"


class OutputMeaning(enum.Enum):
    EMBEDDING = "embedding"
    TOKEN_EMBEDDINGS = "token embeddings"
    DETECTIONS = "detection head"
    CLASS_SCORES = "class scores"
    PROBABILITY = "probability"
    LABELS = "labels"
    MAP = "dense map"
    STATE = "recurrent state"
    OTHER = "tensor"


class ModelKind(enum.Enum):
    TRANSFORMER = "transformer encoder"
    DETECTOR = "object detector"
    VISION_TRANSFORMER = "vision transformer"
    IMAGE_MATMUL = "image model whose weights sit mostly in MatMul/Gemm"
    CNN = "convolutional network"
    STREAMING = "streaming model with state"
    CLASSIFIER = "classifier"
    OTHER = "model"


def article(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


@dataclass(frozen=True)
class InputInfo:
    fact: TensorFact
    role: InputRole
    batch_axis: int | None  # None: not batched (a scalar, or no axis shares the batch dimension)


@dataclass(frozen=True)
class OutputInfo:
    fact: TensorFact
    meaning: OutputMeaning
    why: str = ""  # what the meaning was read from, where it is not plain from the shape (a name, a Softmax)


@dataclass(frozen=True)
class ModelRoles:
    facts: ModelFacts
    kind: ModelKind
    inputs: tuple[InputInfo, ...]
    outputs: tuple[OutputInfo, ...]
    why: str = ""  # why it was taken for `kind`: said in the recipe's header

    def inputs_with(self, role: InputRole) -> list[InputInfo]:
        return [i for i in self.inputs if i.role == role]

    def outputs_with(self, meaning: OutputMeaning) -> list[OutputInfo]:
        return [o for o in self.outputs if o.meaning == meaning]

    @property
    def batch_dim(self) -> str | None:
        """The symbolic name of the batch dimension, from the first batched input."""
        for info in self.inputs:
            if info.batch_axis is not None and isinstance(info.fact.shape[info.batch_axis], str):
                return str(info.fact.shape[info.batch_axis])
        return None


_STATE_NAME = re.compile(r"(^|_)(state|h|c|hidden|cell|past|h0|c0)(_|$|\d)|state", re.IGNORECASE)
_MASK_NAME = re.compile(r"mask", re.IGNORECASE)
_SCORES_NAME = re.compile(r"logit|score|prob|class|cls|label|pred", re.IGNORECASE)
_EMBEDDING_NAME = re.compile(r"embed|pool|sentence|feature|hidden|vector|encod", re.IGNORECASE)
MATMUL_HEAVY = (
    0.5  # the share of the weights MatMul/Gemm must hold for dynamic INT8 to be worth a candidate
)


def _input_role(fact: TensorFact, batch_dim: str | int | None) -> InputRole:
    name = fact.name.lower()
    if fact.is_scalar:
        return InputRole.SCALAR
    if fact.is_integer and _MASK_NAME.search(name):
        return InputRole.ATTENTION_MASK
    if fact.is_integer and ("type" in name or "segment" in name):
        return InputRole.TOKEN_TYPES
    if fact.is_integer and fact.rank == 2 and ("ids" in name or "token" in name):
        return InputRole.TOKEN_IDS
    if (
        fact.is_float
        and _STATE_NAME.search(name)
        and fact.rank == 3
        and _leading_axis_fixed(fact, batch_dim)
    ):
        return InputRole.STATE
    if fact.is_float and fact.rank == 4 and (fact.shape[1] in (1, 3) or fact.shape[3] in (1, 3)):
        return InputRole.IMAGE
    if (
        fact.is_float
        and fact.rank == 2
        and ("input" in name or "audio" in name or "wav" in name or "signal" in name)
    ):
        return InputRole.AUDIO
    return InputRole.FEATURES


def _leading_axis_fixed(fact: TensorFact, batch_dim: str | int | None) -> bool:
    """A state's first axis is not the batch: layers or directions (the batch named elsewhere, or unnamed)."""
    first = fact.shape[0]
    return first != batch_dim if batch_dim is not None else isinstance(first, int) and first > 0


def _batch_axis(fact: TensorFact, batch_dim: str | int | None, role: InputRole) -> int | None:
    if fact.is_scalar:
        return None
    if isinstance(batch_dim, str) and batch_dim in fact.shape:
        return fact.shape.index(batch_dim)
    if (
        role == InputRole.STATE and fact.symbolic_axes()
    ):  # [layers, ?, hidden]: the unnamed axis is the batch
        return fact.symbolic_axes()[0]
    return 0


def _output_meaning(
    fact: TensorFact, roles: list[InputRole], facts: ModelFacts
) -> tuple[OutputMeaning, str]:
    name = fact.name.lower()
    if fact.is_integer:
        return OutputMeaning.LABELS, ""
    if InputRole.STATE in roles and (
        "state" in name or (name.endswith(("n", "_out")) and fact.rank == 3)
    ):
        return OutputMeaning.STATE, ""
    if _is_detection_head(fact):
        return OutputMeaning.DETECTIONS, "one small fixed axis beside a long one, as a YOLO head"
    if (
        fact.rank == 2
        and isinstance(fact.shape[1], int)
        and fact.shape[1] > 1
        and _SCORES_NAME.search(name)
    ):
        return OutputMeaning.CLASS_SCORES, f"named '{fact.name}', {fact.shape[1]} values a sample"
    if InputRole.TOKEN_IDS in roles:
        return (OutputMeaning.TOKEN_EMBEDDINGS if fact.rank == 3 else OutputMeaning.EMBEDDING), ""
    if fact.rank == 2 and fact.shape[1] == 1:
        return OutputMeaning.PROBABILITY, ""
    if fact.rank == 2 and isinstance(fact.shape[1], int) and fact.shape[1] > 1:
        if _EMBEDDING_NAME.search(name):
            return OutputMeaning.EMBEDDING, f"named '{fact.name}'"
        if facts.has_ops(
            "Softmax", "Exp", "Sigmoid", "ArgMax"
        ):  # a head that turns scores into probabilities
            return (
                OutputMeaning.CLASS_SCORES,
                "the graph turns scores into probabilities (Softmax, Sigmoid or ArgMax)",
            )
        return (
            OutputMeaning.EMBEDDING,
            "neither a class-score name nor a Softmax/Sigmoid/ArgMax in the graph",
        )
    return _by_rank(fact, name, facts)


def _by_rank(fact: TensorFact, name: str, facts: ModelFacts) -> tuple[OutputMeaning, str]:
    """Outputs that are neither [batch, N] nor a detection head: one value a sample, a sequence of scores, a map."""
    if fact.rank == 1 and (
        "prob" in name or facts.has_ops("Sigmoid")
    ):  # one value a sample: no cosine to take
        return (
            OutputMeaning.PROBABILITY,
            f"one value a sample, {'named' if 'prob' in name else 'after a Sigmoid'} as a probability",
        )
    if (
        fact.rank == 3
        and isinstance(fact.shape[2], int)
        and fact.shape[2] > 1
        and facts.has_ops("Softmax", "LogSoftmax")
    ):
        return (
            OutputMeaning.CLASS_SCORES,
            f"a sequence of {fact.shape[2]} class scores a position after a Softmax (a recogniser)",
        )
    if fact.rank == 4 and 1 not in (
        fact.shape[2],
        fact.shape[3],
    ):  # [N, C, 1, 1], [N, 1, 1, 96]: pooled values, no map
        return OutputMeaning.MAP, ""
    return OutputMeaning.OTHER, ""


def _is_detection_head(fact: TensorFact) -> bool:
    """YOLO-style [batch, 4 + classes, anchors] (or its transpose): one small fixed axis beside a long one."""
    if fact.rank != 3 or not fact.is_float:
        return False
    small, long = fact.shape[1], fact.shape[2]
    if isinstance(small, int) and isinstance(long, int) and small > long:
        small, long = long, small
    long_enough = not isinstance(long, int) or long >= 1000
    return isinstance(small, int) and 5 <= small <= 300 and long_enough


def _weights(facts: ModelFacts) -> str:
    return (
        f"MatMul/Gemm hold {facts.weight_share('MatMul', 'Gemm'):.0%} of its weights, "
        f"Conv {facts.weight_share('Conv', 'ConvTranspose'):.0%}"
    )


def _image_kind(facts: ModelFacts, image: InputInfo) -> tuple[ModelKind, str] | None:
    """An image model by where its weights are: convolutions, or MatMul/Gemm (a ViT, an MLP over patches)."""
    reading = f"input '{image.fact.name}' is an image and {_weights(facts)}"
    if facts.weight_share("MatMul", "Gemm") >= MATMUL_HEAVY:
        if facts.has_ops("Softmax", "Attention", "MultiHeadAttention"):
            attention = facts.count("Softmax", "Attention", "MultiHeadAttention")
            return ModelKind.VISION_TRANSFORMER, f"{reading}, with {attention} attention softmaxes"
        return ModelKind.IMAGE_MATMUL, reading
    if facts.has_ops("Conv"):
        return ModelKind.CNN, reading
    return None


def _kind(
    facts: ModelFacts, inputs: list[InputInfo], outputs: list[OutputInfo]
) -> tuple[ModelKind, str]:
    roles = {i.role for i in inputs}
    if InputRole.TOKEN_IDS in roles and facts.has_ops("MatMul", "Attention", "Gemm"):
        return (
            ModelKind.TRANSFORMER,
            f"it takes token ids and has {facts.count('MatMul', 'Attention', 'Gemm')} MatMul/Gemm/Attention",
        )
    states = [i.fact.name for i in inputs if i.role == InputRole.STATE]
    if states:
        return (
            ModelKind.STREAMING,
            f"input '{states[0]}' looks like a recurrent state (a state name, rank 3, batch not first)",
        )
    detections = [o.fact.name for o in outputs if o.meaning == OutputMeaning.DETECTIONS]
    if detections:
        return (
            ModelKind.DETECTOR,
            f"output '{detections[0]}' is shaped like a YOLO head [batch, 4 + classes, anchors]",
        )
    image = next((i for i in inputs if i.role == InputRole.IMAGE), None)
    found = _image_kind(facts, image) if image is not None else None
    if found is not None:
        return found
    labelled = [
        o.fact.name
        for o in outputs
        if o.meaning in (OutputMeaning.CLASS_SCORES, OutputMeaning.LABELS)
    ]
    if labelled:
        return ModelKind.CLASSIFIER, f"output '{labelled[0]}' holds class scores or labels"
    return ModelKind.OTHER, "nothing in its inputs, outputs or ops matched a kind init knows"


def read_roles(facts: ModelFacts) -> ModelRoles:
    first = next((f for f in facts.inputs if not f.is_scalar), None)
    batch_dim = (
        first.shape[0]
        if first is not None and first.shape and isinstance(first.shape[0], str)
        else None
    )
    inputs = []
    for fact in facts.inputs:
        role = _input_role(fact, batch_dim)
        inputs.append(InputInfo(fact, role, _batch_axis(fact, batch_dim, role)))
    input_roles = [i.role for i in inputs]
    outputs = [OutputInfo(f, *_output_meaning(f, input_roles, facts)) for f in facts.outputs]
    kind, why = _kind(facts, inputs, outputs)
    return ModelRoles(facts, kind, tuple(inputs), tuple(outputs), why)
