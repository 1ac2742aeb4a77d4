"""Choosing among candidates: a search space expanded into the combinations worth trying, the candidates with
their report section, the quantization search's procedure, select's candidates and selection document, and
Pareto fronts (speed against accuracy).

quantize_search and select share the Pareto front, so a search's front and a selection's are the same points.
Not part of the plugin API."""
