"""engine/leaves/secrets.py and the ortflow.yaml reader: the one redactor, URL credentials refused, credentials at any
depth of ortflow.yaml refused, and ortflow.yaml read with the parser limits (no remote is opened)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ortflow.engine.leaves.errors import EXIT_USAGE, OrtflowError
from ortflow.engine.leaves.secrets import redact, redact_json, url_secrets
from ortflow.engine.store.remote import Remote
from ortflow.engine.store.remote_config import read_config

# A secret for each character a URL parser may stop at or decode: '/', '@', ':', '#', '%'.
SECRETS = ["Sl/ash+Key/x", "at@sign@x", "co:lon:x", "hash#frag#x", "pct%2Fenc%40x"]


@pytest.mark.parametrize("secret", SECRETS)
def test_userinfo_runs_to_the_last_at_whatever_the_secret_holds(secret):
    url = f"s3://AKIAKEYID:{secret}@bucket/prefix/x"
    assert redact(url) == "s3://***@bucket/prefix/x"
    line = f"error: remote '{url}': NoSuchBucket ({url})\nTraceback: {url}"
    assert secret not in redact(line) and redact(line).count("s3://***@bucket/prefix/x") == 3
    assert url_secrets(url).userinfo


def test_query_and_fragment_secrets_are_redacted_and_the_rest_kept():
    presigned = (
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=abc&versionId=3"
    )
    assert redact(presigned) == (
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&versionId=3"
    )
    assert redact("https://acct.blob/c?sig=s/e:c&sv=1") == "https://acct.blob/c?sig=***&sv=1"
    assert redact("https://h/cb#access_token=tok") == "https://h/cb#***"
    assert url_secrets("https://h/p?token=x").parameters == ("token",)
    for plain in ("file:///mnt/share@v2/cache", "s3://bucket/prefix?versionId=3", "no url here"):
        assert redact(plain) == plain and not url_secrets(plain)


def test_json_values_are_redacted_throughout():
    value = {"error": ["s3://K:s/e@b/x"], "n": 1, "s3://K:s/e@b": None}
    assert redact_json(value) == {"error": ["s3://***@b/x"], "n": 1, "s3://***@b": None}


@pytest.mark.parametrize("secret", SECRETS)
def test_a_remote_url_with_credentials_is_refused_before_anything_is_opened(secret):
    with pytest.raises(OrtflowError) as caught:
        Remote(f"s3://AKIAKEYID:{secret}@bucket/prefix")
    assert caught.value.exit_code == EXIT_USAGE and secret not in str(caught.value)
    assert "s3://***@bucket/prefix" in str(caught.value) and "AWS_ACCESS_KEY_ID" in str(
        caught.value
    )


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ortflow.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "options, where",
    [
        (
            "{client_kwargs: {aws_access_key_id: AKIA, aws_secret_access_key: 's/x'}}",
            "client_kwargs.aws_access_key_id",
        ),
        ("{config_kwargs: {aws_session_token: t}}", "config_kwargs.aws_session_token"),
        ("{token: t}", "options.token"),
        ("{storage: [{password: p}]}", "storage.0.password"),
        (
            "{client_kwargs: {endpoint_url: 'http://u:p/w@minio:9000'}}",
            "client_kwargs.endpoint_url",
        ),
        ("{endpoint_url: 'https://minio/?X-Amz-Signature=abc'}", "options.endpoint_url"),
    ],
)
def test_credentials_at_any_depth_of_the_project_file_are_refused(tmp_path, options, where):
    path = config(tmp_path, f"remote:\n  url: s3://bucket/prefix\n  options: {options}\n")
    with pytest.raises(OrtflowError) as caught:
        read_config(path)
    said = str(caught.value)
    assert caught.value.exit_code == EXIT_USAGE and len(said.splitlines()) == 1
    assert said.startswith(f"{path}:3:") and where in said and "AWS_ACCESS_KEY_ID" in said
    assert "s/x" not in said and "u:p/w" not in said


def test_switches_and_files_named_like_secrets_are_not_credentials(tmp_path):
    path = config(
        tmp_path,
        "remote:\n  url: s3://bucket/prefix\n  allow_unsigned: true\n"
        "  options: {endpoint_url: 'http://minio:9000', credentials_file: ~/.aws/credentials}\n",
    )
    assert read_config(path).options["endpoint_url"] == "http://minio:9000"


@pytest.mark.parametrize(
    "text",
    [
        "remote: " + "[" * 3000 + "]" * 3000 + "\n",  # past libyaml's own 1,000 flow levels
        "remote:\n"
        + "".join("  " * i + f"  k{i}:\n" for i in range(1, 200))
        + "  " * 200
        + "  v: 1\n",
        "a: &a [x,x,x,x,x,x,x,x,x]\n"  # a 2 KB alias bomb: 9^10 values
        + "".join(
            f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
            for p, c in zip("abcdefghi", "bcdefghij")
        )
        + "remote: {url: s3://bucket/prefix}\n",
    ],
    ids=["flow", "block", "aliases"],
)
def test_deep_nesting_and_alias_bombs_in_the_project_file_are_refused_quickly(tmp_path, text):
    path = config(tmp_path, text)
    started = time.process_time()
    with pytest.raises(OrtflowError) as caught:
        read_config(path)
    assert caught.value.exit_code == EXIT_USAGE and str(caught.value).startswith(f"{path}:")
    assert len(str(caught.value).splitlines()) == 1
    assert (
        time.process_time() - started < 1.0
    )  # CPU time, not wall time: a busy machine does not fail it


def test_a_url_cut_or_folded_by_a_table_or_a_wrapped_line_shows_no_part_of_its_secret():
    """rich pads, folds and cuts a cell before the output stream sees it; a cut URL has lost its '@'."""
    import io

    from rich.console import Console

    from ortflow.engine.cli.console import Output
    from ortflow.engine.cli.console_tables import run_table
    from ortflow.engine.contracts.types import StageOutcome, Status

    url = "s3://AKIAKEYID:Sl/ash+Key/x@bucket/a/long/prefix/that/does/not/fit/in/the/column"
    outcome = StageOutcome("b", Status.FAILED, error=f"cannot reach {url}")
    narrow = Console(file=io.StringIO(), width=50)
    narrow.print(run_table("leak", [outcome]))
    output = Output()
    output.console = Console(file=io.StringIO(), width=30)
    output.say(f"pushed to {url}")
    for shown in (narrow.file.getvalue(), output.console.file.getvalue()):
        assert "AKIAKEYID" not in shown and "Sl/ash" not in shown
