"""The parser of the commands that start from a model (`engine init`, `engine optimize`): their shared options
(target, data, tokenizer, image preprocessing) declared once."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ortflow.engine.cli import starter_commands
from ortflow.engine.starter.drafts import PARTIAL_CANDIDATES
from ortflow.engine.starter.preprocess import PRESET_HELP, PRESETS


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="the .onnx model")
    parser.add_argument(
        "--target",
        choices=["cpu", "cuda", "tensorrt"],
        default="cpu",
        help="where the model will run (default cpu)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        metavar="PATH",
        help="samples: a folder of images, a .txt/.jsonl text file or an .npz (default: random feeds)",
    )
    parser.add_argument(
        "--tokenizer",
        type=Path,
        metavar="FILE",
        help="with text data: the tokenizer.json (default: one beside the model)",
    )
    parser.add_argument(
        "--min-accuracy",
        type=float,
        metavar="X",
        help="the accuracy the chosen model must keep, in the metric init picks (default: its own, e.g. 0.99 cosine)",
    )
    _candidate_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing recipe")
    parser.add_argument(
        "--preprocess",
        metavar="NAME",
        choices=list(PRESETS),
        help=f"how the model's image input was normalised in training (default: zero-one) — {PRESET_HELP}",
    )
    parser.add_argument(
        "--mean",
        type=float,
        nargs="+",
        metavar="M",
        help="image mean per channel, in --channels order (R G B, or B G R with --channels BGR), or one "
        "value for all; on [0, 1] pixels",
    )
    parser.add_argument(
        "--channels",
        choices=["RGB", "BGR", "gray"],
        help="the image's channels as the model takes them (default RGB; gray: one channel, a 1-channel model)",
    )
    parser.add_argument(
        "--pixels",
        choices=["0-1", "0-255"],
        help="pixel values as the model takes them: scaled to [0, 1] (default) or as they are, 0-255 "
        "(--mean/--std are then in 0-255 units)",
    )
    parser.add_argument(
        "--std",
        type=float,
        nargs="+",
        metavar="S",
        help="image std per channel, in --channels order, or one value for all; on [0, 1] pixels",
    )


def _candidate_options(parser: argparse.ArgumentParser) -> None:
    """What shapes the candidates init proposes: the partial-INT8 search's budget, the deployment's batch."""
    _partial_option(parser)
    _batch_option(parser)


def _batch_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch",
        type=int,
        choices=[1],
        metavar="1",
        help="the batch size you call the model with, where it is 1 (one sample a call, as streaming audio "
        "models are called): the model's batch dim is fixed at 1 and what it decides folded (the delivered "
        "model then takes batch 1 only)",
    )


def _partial_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--partial-candidates",
        type=int,
        default=PARTIAL_CANDIDATES,
        metavar="N",
        help="with real data (--data): where whole-model INT8 misses the accuracy, a search for the largest INT8 "
        f"part that keeps it, building at most N models (default {PARTIAL_CANDIDATES}; 0: no search)",
    )


def add_starter_commands(sub: Any) -> None:
    """`engine init` and `engine optimize`, which start from a model rather than a recipe."""
    init = sub.add_parser(
        "init", help="inspect a model and write a commented recipe that runs as written"
    )
    _model_options(init)
    init.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="RECIPE",
        help="where to write it (default <model>-<target>.yaml)",
    )
    init.set_defaults(handler=starter_commands.cmd_init)

    optimize = sub.add_parser(
        "optimize", help="init + run: the fastest model that keeps its accuracy, copied to -o"
    )
    _model_options(optimize)
    optimize.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="OUT.onnx",
        required=True,
        help="where the chosen model goes",
    )
    optimize.add_argument(
        "--save-recipe",
        type=Path,
        metavar="RECIPE",
        help="where the recipe is kept (default OUT.recipe.yaml)",
    )
    optimize.add_argument(
        "--require-real-data",
        action="store_true",
        help="deliver only a model whose accuracy was checked on real data: else nothing is copied and the "
        "exit code is 6 (without it: exit 0, the verdict labelled 'unverified: random feeds')",
    )
    optimize.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="artifact store (default: $ORTFLOW_CACHE, else .ortflow/ beside the recipe)",
    )
    optimize.set_defaults(handler=starter_commands.cmd_optimize)
