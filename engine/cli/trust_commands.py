"""The team-key commands (`engine cache key new`, `engine cache sign --remote`) and `engine cache verify
--remote`, which names unsigned records apart from damage. The CLI only parses, calls and prints: the verbs
are engine.store.signing, engine.store.remote_sign and engine.store.remote_verify."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.engine.leaves.errors import EXIT_OK, EXIT_STAGE_FAILED, StoreError
from ortflow.engine.store.remote import remote_call

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output

ALLOW_UNSIGNED_HELP = (
    "serve run records from the remote that are not signed with the team's key "
    "(default: refused; see docs/security.md)"
)


def add_allow_unsigned(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-unsigned", action="store_true", help=ALLOW_UNSIGNED_HELP)


def add_trust_commands(cache_sub: Any, remote_help: str) -> None:
    key = cache_sub.add_parser("key", help="the team's signing key for shared run records")
    key_sub = key.add_subparsers(dest="key_command", required=True, metavar="ACTION")
    new = key_sub.add_parser("new", help="write a new random team key to a file only you can read")
    new.add_argument(
        "file", nargs="?", type=Path, help="where (default: ~/.config/ortflow/team.key)"
    )
    new.set_defaults(handler=cmd_cache_key_new)
    sign = cache_sub.add_parser(
        "sign",
        help="sign a remote's records with the team's key, once (after checking each object)",
    )
    sign.add_argument(
        "--remote", nargs="?", const="", required=True, metavar="URL", help=remote_help
    )
    sign.add_argument(
        "--resign-previous",
        action="store_true",
        help="also re-sign records that only a previous key verifies (only when no previous key leaked)",
    )
    sign.set_defaults(handler=cmd_cache_sign, recipes=[])


def cmd_cache_key_new(args: argparse.Namespace, out: Output) -> int:
    """The key is written, never printed: output goes to terminals, CI logs and bug reports."""
    from ortflow.engine.store.signing import config_dir, new_key_file

    path = (args.file or config_dir() / "team.key").expanduser()
    try:
        new_key_file(path)
    except FileExistsError:
        raise StoreError(
            f"{path}: a key is there already and is never overwritten — give another FILE, or, to rotate, "
            "move it aside and name it in ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE (docs/cache.md#rotating-the-team-key)"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot be written ({exc.strerror}) — give another FILE"
        ) from None
    out.say(
        f"wrote a new team key to {path} (mode 0600). Use it on every machine that pushes or pulls: "
        f"export ORTFLOW_SIGNING_KEY_FILE={path} (CI, Dask workers: the file's content as the secret "
        "ORTFLOW_SIGNING_KEY). A remote written without it: `engine cache sign --remote` once."
    )
    return EXIT_OK


def cmd_cache_sign(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.store.remote_config import required_remote
    from ortflow.engine.store.remote_sign import sign_remote

    remote = required_remote(args.remote or None, Path.cwd())
    done = remote_call(remote, lambda: sign_remote(remote, args.resign_previous))
    for line in done.refused:
        out.error(f"{remote.shown}: not signed: {line}")
    if done.skipped:
        out.warn(
            f"{remote.shown}: skipped {len(done.skipped)} run records signed only with a previous key "
            f"({', '.join(sorted(done.skipped))}): a leaked previous key could have forged them — pass "
            "--resign-previous to re-sign them with the current key once you know no previous key leaked; "
            "else remove the previous key and they are refused (docs/cache.md#rotating-the-team-key)"
        )
    out.say(
        f"{remote.shown}: signed {len(done.signed)} run records"
        + (f" ({', '.join(sorted(done.signed))})" if done.signed else "")
        + f"; {done.already} already signed with the current key; {len(done.skipped)} skipped"
        + f"; {len(done.refused)} refused"
    )
    if done.refused:
        out.error(
            "run `engine cache verify --remote --remove` to delete what was refused, then push it again "
            "from a good cache"
        )
    return EXIT_STAGE_FAILED if done.refused else EXIT_OK


def cmd_cache_verify_remote(args: argparse.Namespace, out: Output) -> int:
    from ortflow.engine.cli.cache_scope import locked_outputs
    from ortflow.engine.store.remote_config import required_remote
    from ortflow.engine.store.remote_verify import remove_remote_damage, verify_remote

    near = args.recipes[0] if args.recipes else Path.cwd()
    remote = required_remote(args.remote or None, near, args.allow_unsigned)
    locked = locked_outputs(args.recipes, Path.cwd()) if args.recipes else {}
    verdict = remote_call(remote, lambda: verify_remote(remote, locked))
    for item in verdict.damage:
        out.error(f"{remote.shown}: damaged {item.what} {item.name}: {item.reason}")
    if verdict.damage and args.remove:
        remote_call(remote, lambda: remove_remote_damage(remote, verdict.damage))
        out.say(f"removed {len(verdict.damage)} damaged entries from {remote.shown}")
    elif verdict.damage:
        out.error(
            "run `engine cache verify --remote --remove` to delete them from the remote, then push "
            "them again from a good cache"
        )
    unsigned_ok = _say_unsigned(out, remote, verdict.unsigned)
    if (not verdict.damage or args.remove) and unsigned_ok:
        out.say(f"{remote.shown}: all objects and run records intact")
    failed = (verdict.damage and not args.remove) or not unsigned_ok
    return EXIT_STAGE_FAILED if failed else EXIT_OK


def _say_unsigned(out: Output, remote: Any, unsigned: list[Any]) -> bool:
    """Names the records served only by the opt-in; True when there are none, or the user opted in."""
    if not unsigned:
        return True
    names = ", ".join(f"{u.stage} ({u.key[:12]})" for u in unsigned)
    uncheckable = sum(u.uncheckable for u in unsigned)
    what = f"{len(unsigned)} run records not signed with the team's key"
    if uncheckable:
        what += (
            f" ({uncheckable} signed, but this machine has no ORTFLOW_SIGNING_KEY to check them)"
        )
    if remote.allow_unsigned:
        out.say(f"{remote.shown}: {what}, accepted by --allow-unsigned: {names}")
        return True
    out.error(
        f"{remote.shown}: {what}, refused by every machine that pulls them: {names} — sign them once with "
        "`engine cache sign --remote` (with the team's key set), or accept them with --allow-unsigned"
    )
    return False
