"""A third-party stage package for the engine tests: installed by putting its .dist-info on sys.path.

Each execution appends `<stage> start|end <time>` to $ORTFLOW_TEST_LOG, so tests can count executions and
see overlap. $ORTFLOW_TEST_SLEEP ("stage=seconds,...") slows stages down without changing their cache keys.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ortflow.api import (
    ArtifactKind,
    Better,
    Choice,
    Declares,
    GateFailed,
    Metric,
    MetricName,
    Port,
    Stage,
    StageContext,
    StageError,
    StageResult,
)


def _log(ctx: StageContext, event: str) -> None:
    path = os.environ.get("ORTFLOW_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{ctx.stage_name} {event} {time.time():.4f}\n")


def _extra_sleep(stage: str) -> float:
    for item in filter(None, os.environ.get("ORTFLOW_TEST_SLEEP", "").split(",")):
        name, _, seconds = item.partition("=")
        if name == stage:
            return float(seconds)
    return 0.0


class Concat(Stage):
    type = "concat"
    description = "Concatenates its input files and appends a text."
    inputs = (Port("parts", ArtifactKind.FILE, "files to join", many=True, optional=True),)
    outputs = (Port("file", ArtifactKind.FILE, "the joined bytes", filename="joined.txt"),)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "text": {"type": "string", "default": "", "description": "appended after the inputs"},
            "sleep": {
                "type": "number",
                "minimum": 0,
                "default": 0,
                "description": "seconds to wait first",
            },
            "stamp": {
                "type": "boolean",
                "default": False,
                "description": "append the time: not reproducible",
            },
        },
    }

    def run(self, ctx: StageContext) -> StageResult:
        _log(ctx, "start")
        time.sleep(ctx.params["sleep"] + _extra_sleep(ctx.stage_name))
        data = b"".join(
            Path(p).read_bytes() for p in (ctx.paths("parts") if ctx.has("parts") else ())
        )
        stamp = f"@{time.time()}" if ctx.params["stamp"] else ""
        ctx.output_path("file").write_bytes(data + ctx.params["text"].encode() + stamp.encode())
        _log(ctx, "end")
        return StageResult(summary=f"{len(data)} bytes in")


class FeedStats(Stage):
    """Runs a real model over a dataset's feeds and records what came out (to test datasets end to end)."""

    type = "feed_stats"
    description = "Counts a dataset's feeds and sums the model's first output over them."
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "an ONNX model"),
        Port("data", ArtifactKind.DATASET, "feeds for it"),
    )
    outputs = (
        Port("stats", ArtifactKind.METRICS, "feed count and output sum", filename="stats.json"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "description": "at most this many feeds"}
        },
    }

    def run(self, ctx: StageContext) -> StageResult:
        import json

        import onnxruntime as ort

        from ortflow.api import model_file, model_inputs

        _log(ctx, "start")

        model = model_file(ctx.path("model"))
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        count, total = 0, 0.0
        for feed in ctx.dataset("data").feeds(model_inputs(model), ctx.params.get("limit")):
            total += float(session.run(None, feed)[0].sum())
            count += 1
        ctx.output_path("stats").write_text(json.dumps({"feeds": count, "sum": round(total, 3)}))
        return StageResult(summary=f"{count} feeds")


class Undeclared(Concat):
    """Declares a choice in an output it does not have (not registered: tests load it to see it refused)."""

    type = "undeclared"
    declares = Declares(choice=Choice(model="best", document="file"))


class Solo(Concat):
    """Like concat, but timing-sensitive: the scheduler runs it alone."""

    type = "solo"
    exclusive = True


class Explode(Stage):
    type = "explode"
    description = "Fails on purpose: with a StageError, a gate failure, or an unexpected exception."
    inputs = (Port("file", ArtifactKind.FILE, "any file", optional=True),)
    outputs = (Port("file", ArtifactKind.FILE, "never written", filename="never.txt"),)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "how": {"enum": ["stage_error", "gate", "crash"], "default": "stage_error"},
            "message": {"type": "string", "default": "", "description": "the StageError's text"},
        },
    }

    def run(self, ctx: StageContext) -> StageResult:
        _log(ctx, "start")
        ctx.output_path("file").write_text("half")  # must never reach the cache
        if ctx.params["how"] == "gate":
            raise GateFailed("cosine 0.91 < min 0.99")
        if ctx.params["how"] == "crash":
            raise ZeroDivisionError("division by zero")
        raise StageError(ctx.params["message"] or "the input is unusable — give it a better one")


class Append(Stage):
    """One input file (not a list), for matrix fan-out: its bytes plus a text."""

    type = "append"
    inputs = (Port("file", ArtifactKind.FILE, "one file"),)
    outputs = (
        Port(
            "file", ArtifactKind.FILE, "the input with the text appended", filename="appended.txt"
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "text": {"type": "string", "default": ""},
            "count": {"type": "integer", "default": 1},
        },
    }

    def run(self, ctx: StageContext) -> StageResult:
        _log(ctx, "start")
        ctx.output_path("file").write_bytes(
            ctx.path("file").read_bytes() + ctx.params["text"].encode() * ctx.params["count"]
        )
        return StageResult()


class Chatter(Concat):
    """Like concat, but noisy the way libraries are: prints, warns through logging, and reports progress."""

    type = "chatter"
    inputs = (Port("file", ArtifactKind.FILE, "any file", optional=True),)

    def run(self, ctx: StageContext) -> StageResult:
        import logging
        import sys

        print("chatter from inside the stage")
        print("chatter from inside the stage, on stderr", file=sys.stderr)
        logging.getLogger("some.library").warning("chatter from inside the stage, logged")
        ctx.log("progress line from the stage")
        ctx.output_path("file").write_text("chatter")
        return StageResult(summary="chatted")


class Leaver(Concat):
    """Leaves temporary folders behind, as a library killed mid-way would: one made in this process and one in
    a child process (as ORT's quant_pre_process makes its pre.quant.* folder); its output names both."""

    type = "leaver"
    inputs = (Port("file", ArtifactKind.FILE, "any file", optional=True),)

    def run(self, ctx: StageContext) -> StageResult:
        import subprocess
        import sys
        import tempfile

        here = tempfile.mkdtemp(prefix="left.here.")
        child = subprocess.run(
            [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp(prefix='pre.quant.'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        ctx.output_path("file").write_text(f"{here}\n{child}\n")
        return StageResult(summary="left two folders")


class WorstSampleError(Metric):
    """A third-party metric: the largest mean absolute error of any one sample over the outputs it reads."""

    type = "worst_sample_error"
    names = (
        MetricName(
            "worst_sample_error", Better.LOWER, "the largest per-sample mean absolute error"
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["output"],
        "properties": {"output": {"type": "string"}},
    }

    def reads(self, params):
        return (params["output"],)

    def compute(self, reference, candidate, feeds, params):
        import numpy as np

        pairs = zip(reference[params["output"]], candidate[params["output"]])
        return {
            "worst_sample_error": max(
                float(np.mean(np.abs(r.astype(float) - c.astype(float)))) for r, c in pairs
            )
        }
