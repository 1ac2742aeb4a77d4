"""What quantize_static and quantize_dynamic share: the facts their cache keys depend on (OrtQuantizer), their
parameters read typed (with the values quantize_static's schema allows), and the first part of quantize_static's
metrics.json.

Each settings dataclass stands for its stage's params_schema (tests/unit/test_stages_typed.py holds the two
together). Not declared as Stage.settings yet: some helpers the stages call in stages/quantization (sanity's
check, op_table's rule) still read the parameters by key, so the stages read them typed once op_table has
resolved `auto` op types, and hand the typed form to their own steps and to isa's reduce_range decision
(which must see the op types resolved: the recipe's `auto` names none)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping, TypedDict

from ortflow.api import Json, Params, Stage
from ortflow.stages.quantization import isa, op_table

QUANT_TYPES = ["QInt8", "QUInt8", "QInt16", "QUInt16"]
# onnxruntime.quantization's extra_options for static quantization (quantize_static's docstring, ORT 1.31).
EXTRA_OPTIONS = [
    "ActivationRestrictedAsymmetric",
    "ActivationSymmetric",
    "AddQDQPairToWeight",
    "DedicatedQDQPair",
    "EnableSubgraph",
    "ForceQuantizeNoInputCheck",
    "MatMulConstBOnly",
    "MinimumRealRange",
    "OpTypesToExcludeOutputQuantization",
    "QDQDisableWeightAdjustForInt32Bias",
    "QDQKeepRemovableActivations",
    "QDQOpTypePerChannelSupportToAxis",
    "SmoothQuant",
    "SmoothQuantAlpha",
    "SmoothQuantFolding",
    "TensorQuantOverrides",
    "UseQDQContribOps",
    "WeightSymmetric",
]


class OrtQuantizer(Stage):
    """A stage running one of ORT's quantizers: its key holds the target's instruction set where reduce_range
    is `auto`, and the target and the INT8 op table where op_types_to_quantize is."""

    libraries: ClassVar[tuple[str, ...]] = ("onnxruntime", "onnx")  # the facts every run depends on

    def env_facts(self, params: Params) -> tuple[str, ...]:
        plain = dict(params)  # isa and op_table read the parameters by key
        needs = (("target_isa",) if isa.needs_isa(plain) else ()) + op_table.env_facts(plain)
        return self.libraries + tuple(dict.fromkeys(needs))


def _op_types(asked: tuple[str, ...] | str) -> list[str]:
    """The op types asked for ([]: every type ORT quantizes). `auto` is read as [] by op_table.without_auto
    before the settings are read, so a string here is that."""
    return [] if isinstance(asked, str) else list(asked)


@dataclass(frozen=True)
class StaticSettings:
    """QuantizeStatic's parameters; reduce_range is the decided bool once isa has read `auto`."""

    format: str = "QDQ"  # QDQ or QOperator
    activation_type: str = "QUInt8"  # one of QUANT_TYPES
    weight_type: str = "QInt8"
    per_channel: bool = False
    reduce_range: bool | str = "auto"
    op_types_to_quantize: tuple[str, ...] | str = ()  # or "auto"
    nodes_to_exclude: tuple[str, ...] = ()
    keep_float_op_types: tuple[str, ...] = ()
    keep_float_first: int = 0
    keep_float_last: int = 0
    pre_process: bool | str = "auto"
    allow_weight_only: bool = False
    extra_options: Mapping[str, Json] = field(default_factory=dict)  # ORT's, passed as given
    avoid_traps: bool = True
    mixed_range_ratio: float = 50
    sanity_check: bool = True
    sanity_samples: int = 8
    sanity_min_cosine: float = 0.5

    def op_types(self) -> list[str]:
        return _op_types(self.op_types_to_quantize)


@dataclass(frozen=True)
class DynamicSettings:
    """QuantizeDynamic's parameters."""

    weight_type: str = "QInt8"  # QInt8 or QUInt8
    per_channel: bool = False
    reduce_range: bool | str = "auto"
    op_types_to_quantize: tuple[str, ...] | str = ()  # or "auto"
    nodes_to_exclude: tuple[str, ...] = ()
    extra_options: Mapping[str, Json] = field(default_factory=dict)  # ORT's, passed as given
    sanity_check: bool = True
    sanity_samples: int = 8
    sanity_min_cosine: float = 0.5

    def op_types(self) -> list[str]:
        return _op_types(self.op_types_to_quantize)


class StaticMetrics(TypedDict):
    """The first part of quantize_static's metrics.json: the settings, and what ORT quantized and kept float."""

    format: str
    activation_type: str
    weight_type: str
    per_channel: bool
    reduce_range: bool | str
    quantized_by_op_type: dict[str, int]  # op type -> nodes quantized, sorted by op type
    quantized_activations: int
    QuantizeLinear: int
    DequantizeLinear: int
    nodes_kept_float: list[str]
    quantized_nodes: list[str]
