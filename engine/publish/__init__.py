"""Publish layer: what a run leaves behind for people and for git: the lock file, report.json/.md/.html, and
comparisons between two runs. (A "run record" is something else: the store's JSON of one build,
engine.contracts.builds.RunRecord.)"""
