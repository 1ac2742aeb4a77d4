"""`engine init` and `engine optimize`: thin commands over engine.starter (a model in, a commented recipe out;
that recipe run, and its choice copied out)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.engine.leaves.errors import EXIT_OK, OrtflowError

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output


def _init_options(args: argparse.Namespace, output: Path, name: str | None = None) -> Any:
    from ortflow.engine.starter.drafts import Target
    from ortflow.engine.starter.preprocess import from_flags
    from ortflow.engine.starter.write import InitOptions

    return InitOptions(
        model=args.model,
        output=output,
        target=Target(args.target),
        data=args.data,
        tokenizer=args.tokenizer,
        min_accuracy=args.min_accuracy,
        partial_candidates=args.partial_candidates,
        batch=args.batch,
        force=args.force,
        name=name,
        preprocessing=from_flags(args.preprocess, args.mean, args.std, args.channels, args.pixels),
    )


def _describe_init(result: Any) -> str:
    from ortflow.engine.starter.roles import article

    proposal, roles = result.proposal, result.roles
    made = ", ".join(c.split(".")[0] for c in proposal.candidates if c != "inputs.model") or "none"
    data = (
        "random feeds (replace them with real samples: see the comments)"
        if result.data.kind.value == "random"
        else f"{result.data.loader} loader"
    )
    pick = (
        f"pick: fastest with {proposal.metric.name} >= {proposal.metric.threshold}"
        if made != "none"
        else "timing only (TensorRT engines are not checked for accuracy on this path)"
    )
    return f"{result.recipe}: {article(roles.kind.value)}; data: {data}; candidates: {made}; {pick}"


def _branch_line(result: Any) -> str | None:
    """The closing remark for a model whose network sits inside an If (None otherwise)."""
    from ortflow.engine.starter.proposal import network_in_branches

    facts = result.roles.facts
    branch = network_in_branches(facts)
    if branch is None:
        return None
    decided = ", ".join(branch.deciding_inputs) or "constants"
    return (
        f"note: the network sits inside an `If` on `{branch.condition}` ({branch.nodes_inside} of {facts.node_total} nodes, "
        f"{facts.branch_weight_share:.0%} of the weights), out of INT8's reach until specialized on {decided}: "
        + (
            "the `spec` stage freezes it from the data"
            if "spec" in {s.name for s in result.proposal.stages}
            else "give real data (--data) to specialize it"
        )
    )


def cmd_init(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.starter.write import init_recipe, recipe_name

    output = args.output or Path(f"{recipe_name(args.model, _target(args))}.yaml")
    result = init_recipe(_init_options(args, output))
    out.say(f"wrote {_describe_init(result)}")
    if (note := _branch_line(result)) is not None:
        out.say(note)
    for remark in (
        result.data.remarks
    ):  # the feeds' preprocessing, sizes init changed after its trial run, caps
        out.say(remark)
    out.say(f"next: engine run {result.recipe}")
    return EXIT_OK


def _target(args: argparse.Namespace) -> Any:
    from ortflow.engine.starter.drafts import Target

    return Target(args.target)


def _verdict(choice: Any, output: Path, result: Any, refused: list[str]) -> list[str]:
    """optimize's closing lines: the model delivered, the shapes it takes where the recipe fixed them (--batch 1,
    or a network inside an If specialized on the data's shapes), and the remark on a network inside an If."""
    from ortflow.engine.starter import optimize
    from ortflow.engine.starter.shape_source import batch_note

    lines = [optimize.closing_line(choice, output, refused)]
    batch = batch_note(result.proposal.stages, output, choice.chosen == choice.original)
    branch = _branch_line(result)
    return lines + [line for line in (batch, branch) if line is not None]


def cmd_optimize(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine import pipeline
    from ortflow.engine.cli.command_base import open_workspace
    from ortflow.engine.starter import optimize
    from ortflow.engine.starter.write import recipe_name

    if args.output.suffix != ".onnx":
        raise OrtflowError(f"-o {args.output}: name an .onnx file for the optimized model")
    if args.target == "tensorrt":
        raise OrtflowError(
            "engine optimize --target tensorrt: TensorRT engines are timed, not checked for accuracy, so there "
            "is nothing to choose — write the recipe with `engine init --target tensorrt` and run it"
        )
    if args.require_real_data and args.data is None:
        optimize.require_real(None, args.model, args.output)  # refused before minutes of work
    recipe_path = args.save_recipe or optimize.default_recipe_path(args.output)
    result = optimize.prepare(
        _init_options(args, recipe_path, recipe_name(args.output, _target(args)))
    )
    out.say(f"recipe: {_describe_init(result)}")
    ws = open_workspace(result.recipe, args.cache)
    with out.progress(ws.recipe) as events:
        summary = pipeline.run(ws, 1, False, [], events)
    out.run_table(ws.recipe, summary)
    for remark in (
        result.data.remarks
    ):  # what the verdict rests on: the feeds' preprocessing, sizes init changed, caps
        out.say(remark)
    if summary.exit_code != EXIT_OK:
        return summary.exit_code
    picked = summary.outcomes.get(optimize.PICK)
    if (
        picked is None or not picked.succeeded
    ):  # e.g. a GPU target's stages skipped on a machine without one
        why = (
            f"{picked.status.value}: {picked.error}"
            if picked is not None and picked.error
            else "it is not in the recipe"
        )
        raise optimize.NothingChosen(
            f"nothing chosen, so nothing copied to {args.output}: stage '{optimize.PICK}' did not run ({why})"
        )
    metric = result.proposal.metric
    files = optimize.choice_files(ws.recipe.stages[optimize.PICK].stage_cls, picked, ws.out_dir)
    choice = optimize.read_choice(files, metric.name, metric.threshold)
    if args.require_real_data:
        optimize.require_real(choice, args.model, args.output)
    optimize.deliver(choice, args.output)
    for line in _verdict(choice, args.output, result, optimize.refusals(summary.outcomes)):
        out.say(line)
    out.say(
        f"recipe kept: {result.recipe} (re-run, edit or grow it with `engine run {result.recipe}`)"
    )
    note = optimize.data_note(choice.data, args.model, args.output, choice.left_out)
    if note:  # the last line: what to do before trusting the model
        out.say(note)
    return EXIT_OK
