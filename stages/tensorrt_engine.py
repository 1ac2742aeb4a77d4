"""tensorrt_engine: build TensorRT engines for a model through ONNX Runtime's TensorRT execution provider."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ortflow.api import (
    ArtifactKind,
    Json,
    JsonObject,
    Placement,
    Port,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
)
from ortflow.api import onnx as onnx_model

SHAPE: JsonObject = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
TRT = "TensorrtExecutionProvider"


@dataclass(frozen=True)
class TensorrtSettings:
    """TensorrtEngine's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    fp16: bool = False
    int8: bool = False
    workspace_mb: int | None = None  # no default in the schema: TensorRT's own
    builder_optimization_level: int = 3
    min_subgraph_size: int = 1
    max_partition_iterations: int = 1000
    timing_cache: bool = True
    profiles: Mapping[str, Mapping[str, Sequence[int]]] = field(default_factory=dict)  # min/opt/max
    ep_context: bool = True
    device_id: int = 0
    fallback: tuple[str, ...] = ("CUDAExecutionProvider", "CPUExecutionProvider")
    max_fallback_nodes: int | None = None
    options: Mapping[str, Json] = field(default_factory=dict)  # trt_* provider options


class TensorrtEngine(SettingsStage[TensorrtSettings]):
    type = "tensorrt_engine"
    version = "1"
    exclusive = True  # engine builds take the whole GPU, and minutes
    description = (
        "Build TensorRT engines through ORT's TensorRT execution provider: fp16, int8 (a QDQ model, or a "
        "calibrate stage's table converted to TensorRT's format), workspace size, builder optimization level, "
        "min_subgraph_size, max_partition_iterations, a timing cache, and min/opt/max shape profiles for dynamic "
        "inputs. Warm-up inferences at every profile shape make sure the engines are really built. Outputs the "
        "engine cache folder and ORT's EP-context model (the engine embedded, so a benchmark loads it without "
        "rebuilding), and reports which nodes fell back to CUDA or the CPU. Engines are not portable: the cache key "
        "holds the GPU and its compute capability, and the TensorRT, CUDA and ORT versions. Caveat: this build has "
        "never run on a GPU in this project's CI or tests (none has one): only its parameters, its refusal without "
        "TensorRT and its recipe are checked."
    )
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the model (fp32, fp16, or QDQ for int8)"),
        Port(
            "calibration",
            ArtifactKind.CALIBRATION_TABLE,
            "a calibrate table for int8 on a float model",
            optional=True,
        ),
    )
    outputs = (
        Port(
            "engines",
            ArtifactKind.DIRECTORY,
            "TensorRT's engine cache folder (engines, profiles, timing cache)",
            filename="engines",
        ),
        Port(
            "context_model",
            ArtifactKind.ONNX_MODEL,
            "ORT's EP-context model with the engine embedded",
            filename="model_ctx.onnx",
            optional=True,
        ),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "build time, engines, node placement",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "fp16": {
                "type": "boolean",
                "default": False,
                "description": "allow fp16 kernels (trt_fp16_enable)",
            },
            "int8": {
                "type": "boolean",
                "default": False,
                "description": "allow int8 kernels (trt_int8_enable): needs a QDQ model or a calibration input",
            },
            "workspace_mb": {
                "type": "integer",
                "minimum": 1,
                "description": "trt_max_workspace_size (default: TensorRT's)",
            },
            "builder_optimization_level": {
                "type": "integer",
                "minimum": 0,
                "maximum": 5,
                "default": 3,
                "description": "higher builds longer and may find faster kernels",
            },
            "min_subgraph_size": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "smallest subgraph handed to TensorRT",
            },
            "max_partition_iterations": {"type": "integer", "minimum": 1, "default": 1000},
            "timing_cache": {
                "type": "boolean",
                "default": True,
                "description": "keep TensorRT's timing cache with the engines",
            },
            "profiles": {
                "type": "object",
                "default": {},
                "additionalProperties": {
                    "type": "object",
                    "required": ["min", "opt", "max"],
                    "additionalProperties": False,
                    "properties": {"min": SHAPE, "opt": SHAPE, "max": SHAPE},
                },
                "description": "per dynamic input, its min/opt/max shape, e.g. {input_ids: {min: [1, 16], "
                "opt: [1, 128], max: [8, 512]}}",
            },
            "ep_context": {
                "type": "boolean",
                "default": True,
                "description": "also write ORT's EP-context model (engine embedded)",
            },
            "device_id": {"type": "integer", "minimum": 0, "default": 0},
            "fallback": {
                "type": "array",
                "items": {"enum": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
                "default": ["CUDAExecutionProvider", "CPUExecutionProvider"],
                "description": "providers for the nodes TensorRT does not take",
            },
            "max_fallback_nodes": {
                "type": "integer",
                "minimum": 0,
                "description": "fail when more nodes than this run outside TensorRT",
            },
            "options": {
                "type": "object",
                "propertyNames": {"pattern": "^trt_"},
                "default": {},
                "description": "any other TensorRT provider option, e.g. {trt_layer_norm_fp32_fallback: true}",
            },
        },
    }

    settings = TensorrtSettings

    def problems(self, settings: TensorrtSettings) -> list[str]:
        problems = []
        for name, profile in settings.profiles.items():
            shapes = [profile["min"], profile["opt"], profile["max"]]
            if len({len(s) for s in shapes}) != 1:
                problems.append(f"profiles.{name}: min, opt and max must have the same rank")
            elif not all(a <= b <= c for a, b, c in zip(*shapes)):
                problems.append(f"profiles.{name}: each dimension needs min <= opt <= max")
        return problems

    def facts(self, settings: TensorrtSettings) -> tuple[str, ...]:
        # the nodes TensorRT leaves run on the CUDA provider, whose build (cuda_provider) shapes the engine's session
        return ("onnxruntime", "gpu", "tensorrt", "cuda", "cuda_provider", "platform")

    def run(self, ctx: StageContext) -> StageResult:
        from ortflow.api import model_inputs
        from ortflow.api.providers import resolve
        from ortflow.stages.measurement.placement import node_placement, summary

        params = ctx.settings(TensorrtSettings)
        providers = [TRT, *params.fallback]
        resolve(providers).require("building TensorRT engines")
        source = onnx_model.model_file(ctx.path("model"))
        inputs = model_inputs(source)
        engines = ctx.output_path("engines")
        engines.mkdir()
        options = self._provider_options(
            params, engines, ctx.path("calibration") if ctx.has("calibration") else None, source
        )
        session_options = _session_options(ctx, params.ep_context)
        started = time.perf_counter()
        session = onnx_model.load_for_ort(
            source, session_options, [(TRT, options), *params.fallback]
        )
        if session.get_providers()[0] != TRT:
            raise StageError(
                f"ONNX Runtime did not register TensorRT for {source.name} (it used "
                f"{', '.join(session.get_providers())}) — check the TensorRT libraries and the model"
            )
        shapes = _warmup_shapes(inputs, params.profiles)
        for shape_set in shapes:
            session.run(None, {i.name: _feed(i, shape_set[i.name]) for i in inputs})
        seconds = time.perf_counter() - started
        placement = summary(node_placement(Path(session.end_profiling())), TRT)
        built = sorted(p.name for p in engines.iterdir() if p.suffix == ".engine")
        if not built:
            raise StageError(
                "TensorRT built no engine: no part of the graph was assigned to it "
                f"(nodes by provider: {placement['nodes_by_provider']}) — check min_subgraph_size and the "
                "ops TensorRT supports"
            )
        metrics = {
            "build_seconds": round(seconds, 2),
            "engines": built,
            "warmup_shapes": shapes,
            "placement": placement,
            "options": {k: v for k, v in options.items() if "path" not in k},
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        _check_fallback(placement, params.max_fallback_nodes)
        return StageResult(
            summary=f"{len(built)} engine(s) in {seconds:.1f} s; {placement['fallback_nodes']} nodes "
            f"outside TensorRT",
            metrics={
                "engines": len(built),
                "fallback_nodes": placement["fallback_nodes"],
                "build_seconds": round(seconds, 2),
            },
        )

    @staticmethod
    def _provider_options(
        params: TensorrtSettings, engines: Path, calibration: Path | None, source: Path
    ) -> dict[str, Json]:
        options: dict[str, Json] = {
            "device_id": params.device_id,
            "trt_fp16_enable": params.fp16,
            "trt_int8_enable": params.int8,
            "trt_engine_cache_enable": True,
            "trt_engine_cache_path": str(engines),
            "trt_timing_cache_enable": params.timing_cache,
            "trt_timing_cache_path": str(engines),
            "trt_builder_optimization_level": params.builder_optimization_level,
            "trt_min_subgraph_size": params.min_subgraph_size,
            "trt_max_partition_iterations": params.max_partition_iterations,
        }
        if params.workspace_mb is not None:  # no default: absent from the recipe, TensorRT's own
            options["trt_max_workspace_size"] = params.workspace_mb * 1024 * 1024
        if params.profiles:
            for key in ("min", "opt", "max"):
                options[f"trt_profile_{key}_shapes"] = ",".join(
                    f"{name}:{'x'.join(map(str, p[key]))}"
                    for name, p in sorted(params.profiles.items())
                )
        if params.int8:
            if calibration is not None:
                options.update(_trt_calibration(calibration, engines))
            elif not onnx_model.op_counts(source).get("QuantizeLinear"):
                raise StageError(
                    "int8 needs a QDQ model (quantize_static) or a `calibration` input — TensorRT has no "
                    "ranges for this float model"
                )
        options.update(params.options)
        return options


def _session_options(ctx: StageContext, ep_context: bool) -> Any:
    """Session options that profile the build (node placement comes from the profile) and, with ep_context,
    have ORT write its EP-context model (the engine embedded) as the `context_model` output."""
    import onnxruntime as ort

    session_options = ort.SessionOptions()
    session_options.enable_profiling = True  # node placement comes from the profile
    session_options.profile_file_prefix = str(ctx.scratch / "placement")
    session_options.log_severity_level = 3
    # session config keys, mapped 1:1 to the TensorRT EP's trt_*ep_context* options
    if ep_context:
        session_options.add_session_config_entry("ep.context_enable", "1")
        session_options.add_session_config_entry(
            "ep.context_file_path", str(ctx.output_path("context_model"))
        )
        session_options.add_session_config_entry("ep.context_embed_mode", "1")
    return session_options


def _check_fallback(placement: Placement, limit: int | None) -> None:
    """Fail when more nodes than max_fallback_nodes (`limit`) run outside TensorRT."""
    if limit is not None and placement["fallback_nodes"] > limit:
        raise StageError(
            f"{placement['fallback_nodes']} nodes run outside TensorRT (max_fallback_nodes {limit}), e.g. "
            f"{', '.join(placement['fallback_examples'][:5])} — these ops fall back with copies around them"
        )


def _trt_calibration(table_path: Path, engines: Path) -> dict[str, str | bool]:
    """ORT's calibration JSON converted to the flatbuffers table the TensorRT EP reads (beside the engines)."""
    import numpy as np
    from onnxruntime.quantization.calibrate import TensorData, load_tensors_data
    from onnxruntime.quantization.quant_utils import write_calibration_table

    try:
        table = load_tensors_data(table_path)
    except Exception as exc:
        raise StageError(f"{table_path.name} is not a calibration table: {exc}") from exc
    # TensorRT's table holds one symmetric bound per tensor, and ORT's writer takes max(highest, lowest): give it
    # the largest magnitude on both sides, or an asymmetric range like [-8, 1] would be clipped to +-1.
    symmetric = {}
    for name, data in table.data.items():
        lowest, highest = (
            float(np.asarray(v).max())
            for v in (np.abs(data.range_value[0]), np.abs(data.range_value[1]))
        )
        bound = np.float32(max(lowest, highest))
        symmetric[name] = TensorData(lowest=-bound, highest=bound)
    write_calibration_table(symmetric, dir=str(engines))
    return {
        "trt_int8_calibration_table_name": "calibration.flatbuffers",
        "trt_int8_use_native_calibration_table": False,
    }


def _warmup_shapes(
    inputs: list[Any], profiles: Mapping[str, Mapping[str, Sequence[int]]]
) -> list[dict[str, list[int]]]:
    """One shape set per profile point (min, opt, max); inputs without a profile need static shapes."""
    unknown = sorted(set(profiles) - {i.name for i in inputs})
    if unknown:
        raise StageError(
            f"profiles: the model has no input {', '.join(unknown)} (it has {', '.join(i.name for i in inputs)})"
        )
    sets = []
    for point in ("min", "opt", "max") if profiles else ("opt",):
        shape_set = {}
        for spec in inputs:
            if spec.name in profiles:
                shape_set[spec.name] = list(profiles[spec.name][point])
            elif all(isinstance(d, int) and d > 0 for d in spec.shape):
                shape_set[spec.name] = list(spec.shape)
            else:
                raise StageError(
                    f"input '{spec.name}' has dynamic dimensions {spec.describe()}: give it a shape profile "
                    f"(profiles: {{{spec.name}: {{min: [...], opt: [...], max: [...]}}}})"
                )
        if shape_set not in sets:
            sets.append(shape_set)
    return sets


def _feed(spec: Any, shape: list[int]) -> Any:
    """Ones: valid token ids and a full attention mask for text models, a neutral input for the rest."""
    import numpy as np

    return np.ones(shape, dtype=spec.dtype)
