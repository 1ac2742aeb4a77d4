"""Deprecated: the built-in dataset loaders moved to `ortflow.loaders` (plugins, importing only ortflow.api).
`ortflow.engine.loaders.<name>` re-exports each for one release and warns on import."""

import warnings


def moved(module: str, name: str) -> None:
    """Warn that `module` (ortflow.engine.loaders.<x>) is a shim: say what to import instead."""
    new = module.replace("ortflow.engine.loaders", "ortflow.loaders", 1)
    warnings.warn(
        f"{module} moved to {new}: `from {new} import {name}` (this module goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
