"""Measuring a candidate model: accuracy gates and their verdict, per-output comparisons with the reference, task
metrics (installed types and recipe-local files), how busy the machine was while timing, and which execution
provider ran each node; the benchmark's and validate_accuracy's parameter schemas, sessions, peak memory, reports
and accuracy document (each stage module keeps its ports and its run).

benchmark, tensorrt_engine, validate_accuracy and quantize_search share these so that every stage measures and
judges alike. Not part of the plugin API."""
