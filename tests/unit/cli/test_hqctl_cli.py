"""hqctl argument handling that needs no server: usage, Go-style flags, durations, progress."""

from __future__ import annotations

import asyncio
import io
import sys

import pytest

from hq_apps.api.source_upload import body_chunks
from hq_apps.cli.cliutil import go_style, parse_go_duration
from hq_apps.cli.hqctl import run
from hq_apps.cli.hqctl.progress import Progress
from hq_domain.errors import InvalidJob

USAGE = "usage: hqctl {enqueue|enqueue-source} [flags]\n"


def test_usage_and_help_exit_codes(capsys) -> None:
    assert run([]) == 1
    assert capsys.readouterr().err.startswith(USAGE)
    assert run(["bogus"]) == 1
    assert run(["-h"]) == 0
    assert capsys.readouterr().out.startswith("Usage: hqctl COMMAND")
    assert run(["enqueue", "-h"]) == 0
    assert capsys.readouterr().out.startswith("Usage: hqctl enqueue ")
    assert run(["enqueue", "--nope", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hqctl enqueue: ") and "--nope" in err


def test_flag_validation_before_network(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HQ_MACHINE_TOKEN_FILE", raising=False)
    cases = {
        ("--format", "csv"): "enqueue: --format must be values or jsonl",
        ("--batch-size", "0"): "enqueue: --batch-size must be at least 1",
        ("--progress-every", "-1"): "enqueue: --progress-every must not be negative",
        ("--max-jobs", "0"): "enqueue: --max-jobs must be at least 1",
        ("--type", "page"): "enqueue: --type must be seed or asset",
        (
            "--format",
            "jsonl",
            "--type",
            "seed",
        ): "enqueue: --type is allowed only with --format values",
        (): "enqueue: --machine-token-file or HQ_MACHINE_TOKEN_FILE is required",
    }
    for extra, message in cases.items():
        assert run(["enqueue", "--project-id", "p", *extra]) == 1, extra
        assert capsys.readouterr().err == message + "\n"
    token = tmp_path / "t"
    token.write_text("tok")
    token.chmod(0o600)
    assert (
        run(["enqueue", "-project-id", "p", "-machine-token-file", str(token), "-timeout", "x"])
        == 1
    )
    assert capsys.readouterr().err.startswith("enqueue: invalid --timeout")
    assert run(["whoami", "--machine-token-file", str(token), "--url", "http://h"]) == 1
    assert capsys.readouterr().err == (
        "whoami: tracker URL must use https (got http://h; add --allow-http for a local "
        "http:// tracker)\n"
    )


def test_go_style_flags() -> None:
    flags = {"input", "batch-size", "allow-http"}
    assert go_style(
        ["-input", "-", "-batch-size=5", "--allow-http", "-x"], flags, frozenset({"allow-http"})
    ) == ["--input=-", "--batch-size=5", "--allow-http", "-x"]
    assert go_style(["--batch-size", "-1"], flags) == ["--batch-size=-1"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600.0), ("1h30m", 5400.0), ("1.5s", 1.5), ("250ms", 0.25), ("0", 0.0), ("-2s", -2.0)],
)
def test_go_durations(text, seconds) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "m", "1d", "1 s", "s1"])
def test_bad_go_durations(text) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_tty(monkeypatch) -> None:
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    p = Progress(10)
    p.update(10, 5)
    p.line("batches=1 submitted=10 inserted=5")
    p.close()
    assert plain.getvalue() == "batches=1 submitted=10 inserted=5\n"
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    p = Progress(10)
    p.update(10, 5)
    p.line("batches=1 submitted=10 inserted=5")
    p.close()
    text = tty.getvalue()
    assert text.startswith("\r[" + "#" * 30 + "] 10/10 jobs, 5 inserted")
    assert text.endswith("\r\x1b[Kbatches=1 submitted=10 inserted=5\n")


class _FakeRequest:
    def __init__(self, messages) -> None:
        self._messages = list(messages)

    async def receive(self):
        return self._messages.pop(0)


def test_upload_body_is_capped_while_streaming() -> None:
    async def collect(messages, limit):
        return [c async for c in body_chunks(_FakeRequest(messages), limit)]  # type: ignore[arg-type]

    ok = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd", "more_body": False},
    ]
    assert asyncio.run(collect(ok, 4)) == [b"ab", b"cd"]
    with pytest.raises(InvalidJob, match="request body too large"):
        asyncio.run(collect(ok, 3))
    with pytest.raises(InvalidJob, match="unexpected EOF"):
        asyncio.run(collect([{"type": "http.disconnect"}], 3))
