"""`engine run`'s options turned into what the run needs: checked (what the parser cannot say alone), the remote
the workspace reads through to, the executor. engine.cli.commands.cmd_run uses them."""

from __future__ import annotations

import argparse
from typing import Any

from ortflow.engine.leaves.errors import OrtflowError


def check_run_options(args: argparse.Namespace) -> None:
    """What the parser cannot say alone: --jobs is positive, --executor dask and --scheduler go together."""
    if args.jobs is not None and args.jobs < 1:
        raise OrtflowError("--jobs must be at least 1")
    if (args.executor == "dask") != bool(args.scheduler):
        raise OrtflowError(
            "--executor dask needs --scheduler tcp://HOST:PORT"
            if args.scheduler is None
            else "--scheduler is for --executor dask"
        )


def run_executor(args: argparse.Namespace) -> Any:
    """The Dask cluster's executor under --executor dask; None for the local threads."""
    if args.executor != "dask":
        return None
    from ortflow.engine.run.dask_executor import DaskExecutor

    return DaskExecutor(args.scheduler, args.jobs)


def run_remote(args: argparse.Namespace) -> Any:
    """The remote configured (--remote, $ORTFLOW_REMOTE or ortflow.yaml), which the workspace's store reads
    through to (engine.store.shared); None without one."""
    from ortflow.engine.store.remote_config import remote_setting

    setting = remote_setting(args.remote, args.recipe, args.allow_unsigned)
    if setting is None:
        if args.push:
            raise OrtflowError(
                "--push needs a remote: --remote URL, $ORTFLOW_REMOTE or `remote:` in ortflow.yaml"
            )
        return None
    return setting.open()
