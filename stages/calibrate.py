"""calibrate: run a model over a dataset and record each activation's range for static quantization."""

from __future__ import annotations

import json
from typing import Any

from ortflow.engine.ort import onnx_model
from ortflow.engine.dataset import batched, model_inputs
from ortflow.engine.errors import StageError
from ortflow.stages.support.calibration_table import with_mask_tensors
from ortflow.engine.stage import ArtifactKind, Port, Stage, StageContext, StageResult

METHODS = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile", "distribution": "Distribution"}
DEFAULT_BINS = {"entropy": 128, "percentile": 2048, "distribution": 2048}  # ORT wants >= 512 for distribution


class Calibrate(Stage):
    type = "calibrate"
    version = "1"
    description = (
        "Run the model (after ORT's quant_pre_process, like quantize_static) over a dataset in batches and "
        "write a calibration table (ORT's JSON format: tensor -> range). Values at or beyond the mask "
        "threshold (the -3.4e38 fills of attention masks) are left out of every range, so one padded "
        "sentence cannot blow a range up. A separate cached stage, so several quantizations share one table."
    )
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the fp32 model to be quantized"),
        Port("data", ArtifactKind.DATASET, "representative inputs"),
    )
    outputs = (
        Port("table", ArtifactKind.CALIBRATION_TABLE, "tensor ranges (onnxruntime.quantization JSON cache)",
             filename="calibration.json"),
        Port("metrics", ArtifactKind.METRICS, "samples used, tensors calibrated, masked tensors", filename="metrics.json"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "method": {"enum": list(METHODS), "default": "minmax", "description": "minmax, entropy, percentile or distribution"},
            "percentile": {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "default": 99.999,
                           "description": "percentile method: the share of values the range covers"},
            "num_bins": {"type": "integer", "minimum": 2, "description": "histogram bins (default: ORT's for the method)"},
            "num_quantized_bins": {"type": "integer", "minimum": 2, "default": 128, "description": "entropy method: target bins"},
            "symmetric": {"type": "boolean", "default": False, "description": "ranges symmetric around zero"},
            "moving_average": {"type": "boolean", "default": False, "description": "minmax: average per-batch ranges instead of the extremes"},
            "samples": {"type": "integer", "minimum": 1, "default": 200, "description": "at most this many samples"},
            "batch_size": {"type": "integer", "minimum": 1, "default": 8, "description": "samples per inference; bounds memory"},
            "op_types_to_calibrate": {"type": "array", "items": {"type": "string"}, "default": [],
                                      "description": "only outputs of these op types (default: all float tensors)"},
            "mask_threshold": {"type": "number", "exclusiveMinimum": 0, "default": 1e30,
                               "description": "values with a magnitude at or above this are mask fills, not data"},
            "pre_process": {"type": "boolean", "default": True,
                            "description": "calibrate the graph quant_pre_process makes (what quantize_static quantizes)"},
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        method, bins = params["method"], params.get("num_bins")
        problems = []
        if params["moving_average"] and method != "minmax":
            problems.append("moving_average applies to method minmax only")
        if bins is not None and method == "minmax":
            problems.append("num_bins applies to the histogram methods (entropy, percentile, distribution) only")
        if bins is not None and method == "distribution" and bins < 512:
            problems.append(f"num_bins {bins} is too few for method distribution: ORT needs at least 512")
        if bins is not None and method == "entropy" and bins < params["num_quantized_bins"]:
            problems.append(f"num_bins {bins} is below num_quantized_bins {params['num_quantized_bins']}")
        return problems

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy")

    def run(self, ctx: StageContext) -> StageResult:
        import numpy as np
        from onnxruntime.quantization.calibrate import (
            CalibrationCacheEncoder, CalibrationMethod, HistogramCollector, TensorData, TensorsData, create_calibrator,
        )

        params = ctx.params
        method = params["method"]
        source = onnx_model.private_model(ctx.inputs["model"], ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        model = onnx_model.pre_processed(source, ctx.scratch / "pre.onnx") if params["pre_process"] else source
        large = onnx_model.total_size(model) > onnx_model.TWO_GB
        # Every method uses the raw-tensor augmentation, so values can be cleaned before they are reduced.
        calibrator = create_calibrator(
            str(model), params["op_types_to_calibrate"] or None,
            augmented_model_path=str(ctx.scratch / "augmented.onnx"),
            calibrate_method=CalibrationMethod.Percentile, use_external_data_format=large,
            extra_options={"symmetric": params["symmetric"], "num_bins": 2},
        )
        session = calibrator.infer_session
        names = [o.name for o in session.get_outputs()]
        wanted = set(calibrator.tensors_to_calibrate)
        collector = None if method == "minmax" else HistogramCollector(
            method=method, symmetric=params["symmetric"], num_bins=params.get("num_bins") or DEFAULT_BINS[method],
            num_quantized_bins=params["num_quantized_bins"], percentile=params["percentile"], scenario="same")
        lows: dict[str, list[float]] = {}
        highs: dict[str, list[float]] = {}
        masked: dict[str, int] = {}
        samples = 0
        inputs = model_inputs(model)
        # A model whose batch axis is fixed (usually at 1) takes one sample per run.
        fixed_batch = any(i.shape and isinstance(i.shape[0], int) and i.shape[0] > 0 for i in inputs)
        feeds = ctx.inputs["data"].feeds(inputs, limit=params["samples"])
        for batch in batched(feeds, 1 if fixed_batch else params["batch_size"]):
            samples += len(next(iter(batch.values())))
            try:
                outputs = dict(zip(names, session.run(None, batch)))
            except Exception as exc:
                raise StageError(f"running the model on the dataset failed at sample {samples}: {exc}") from exc
            clean = {}
            for name in sorted(wanted & outputs.keys()):  # sorted: the table's bytes must not vary run to run
                values = np.asarray(outputs[name]).ravel()
                values = values[~np.isnan(values)] if values.dtype.kind == "f" else values
                fills = np.abs(values) >= params["mask_threshold"]
                if fills.any():
                    masked[name] = masked.get(name, 0) + int(fills.sum())
                    values = values[~fills]
                if values.size:
                    clean[name] = values
            if collector is None:
                for name, values in clean.items():
                    lows.setdefault(name, []).append(float(values.min()))
                    highs.setdefault(name, []).append(float(values.max()))
            else:
                collector.collect({name: [values] for name, values in clean.items()})
        ranges = self._ranges(collector, lows, highs, params)
        if not ranges:
            raise StageError("no tensor could be calibrated: the model has no float activations to quantize "
                             f"(or every value was at or above mask_threshold {params['mask_threshold']:g})")
        # Mask tensors stay out of the table: clamping their fills to a data range would let padding tokens
        # into attention. The table names them so quantize_static keeps their producers and consumers in float.
        table = TensorsData(getattr(CalibrationMethod, METHODS[method]),
                            {name: TensorData(lowest=np.float32(lo), highest=np.float32(hi))
                             for name, (lo, hi) in sorted(ranges.items()) if name not in masked})
        payload = with_mask_tensors({**table.to_dict(), "smooth_quant": False}, sorted(masked))
        ctx.output_path("table").write_text(json.dumps(payload, cls=CalibrationCacheEncoder, sort_keys=True), encoding="utf-8")
        metrics = {
            "method": method,
            "samples": samples,
            "tensors": len(ranges) - len(masked),
            "masked_tensors": dict(sorted(masked.items())),
            "widest": dict(sorted(((n, [round(lo, 4), round(hi, 4)]) for n, (lo, hi) in ranges.items()),
                                  key=lambda item: item[1][0] - item[1][1])[:5]),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = f"{method}: {len(ranges) - len(masked)} tensors from {samples} samples"
        if masked:
            summary += f"; mask fills left out of {len(masked)} tensors"
        return StageResult(summary=summary, metrics={"samples": samples, "tensors": len(ranges) - len(masked),
                                                     "masked": len(masked)})

    @staticmethod
    def _ranges(collector: Any, lows: dict[str, list[float]], highs: dict[str, list[float]],
                params: dict[str, Any]) -> dict[str, tuple[float, float]]:
        import numpy as np

        if collector is not None:
            if not collector.histogram_dict:
                return {}
            result = collector.compute_collection_result()
            return {name: (float(np.asarray(v.range_value[0] if hasattr(v, "range_value") else v[0])),
                           float(np.asarray(v.range_value[1] if hasattr(v, "range_value") else v[1])))
                    for name, v in result.items()}
        reduce_low, reduce_high = (np.mean, np.mean) if params["moving_average"] else (np.min, np.max)
        ranges = {}
        for name in lows:
            low, high = float(reduce_low(lows[name])), float(reduce_high(highs[name]))
            if params["symmetric"]:
                bound = max(abs(low), abs(high))
                low, high = -bound, bound
            ranges[name] = (low, high)
        return ranges
