"""Rewriting a model's graph for how it is deployed (fixed shapes, frozen inputs, folded control flow), shared by
the stages that do it. Not part of the plugin API."""
