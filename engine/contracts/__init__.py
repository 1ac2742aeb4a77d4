"""The contracts every layer shares: what a stage, a dataset loader and a metric are (stage, dataset, metric,
declarations, params), the registry that finds them, the typed documents a run writes and reads (documents,
benchmark_results, report_section), what a build is made of (builds, provenance) and the shared enums (types).
They import only the leaves (ortflow.engine.leaves); the plugin facade ortflow.api re-exports most of them."""
