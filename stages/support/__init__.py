"""Helpers that only stages use (quantization analysis, Pareto fronts, node placement). Not part of the plugin API."""
