"""Record layer: what a run leaves behind for people and for git: the lock file, report.json/.md/.html,
and comparisons between two runs."""
