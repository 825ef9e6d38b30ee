"""Errors that say what to do, and one output style (issue 15): no server needed."""

from __future__ import annotations

import io
import json
import socket

import msgspec
import pytest

from hq_adapters.admin_client import wire
from hq_apps.cli import tracker
from hq_apps.cli.dberrors import database_error, describe_dsn
from hq_apps.cli.hqctl import render, run
from hq_apps.wiring import check_listen
from tests.unit.api.live import free_port


@pytest.fixture
def token(tmp_path, monkeypatch):
    path = tmp_path / "admin.token"
    path.write_text("tok\n")
    path.chmod(0o600)
    monkeypatch.delenv("HQ_URL", raising=False)
    monkeypatch.delenv("HQ_MACHINE_TOKEN_FILE", raising=False)
    return str(path)


def test_refused_connection_names_the_url_and_asks(token, capsys) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert run(["whoami", "--url", url, "--allow-http", "--machine-token-file", token]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"whoami: cannot connect to the tracker at {url} (")
    assert "is it running" in err


def test_json_errors_are_json(token, capsys) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    argv = ["projects", "list", "--json", "--url", url, "--allow-http", "--machine-token-file", token]
    assert run(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    doc = json.loads(captured.err)
    assert doc["error"]["message"].startswith("projects list: cannot connect")
    assert doc["error"]["code"] is None and doc["error"]["status"] is None


def test_default_url_is_announced_on_stderr(token, capsys, monkeypatch) -> None:
    import httpx

    def refuse(self, *a, **k):  # never reach the real production tracker from a test
        raise httpx.ConnectError("refused")

    monkeypatch.setattr(httpx.Client, "stream", refuse)
    assert run(["whoami", "--machine-token-file", token]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "whoami: using https://hq.saveweb.org (HQ_URL is not set; --url overrides)"
    )


def test_invalid_choices_list_the_valid_values(token, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HQ_DATABASE_URL", "postgresql://nowhere/x")
    for flag, value, valid in [
        ("--identity-mode", "unique", "external_id, unique_value, none"),
        ("--status", "paused", "active, draining, archived"),
        ("--claim-order", "lifo", "fifo, random"),
    ]:
        assert run(["projects", "put", "--project-id", "p", flag, value,
                    "--machine-token-file", token]) == 1  # fmt: skip
        err = capsys.readouterr().err
        assert err == f"projects put: invalid {flag} {value!r}: use one of {valid}\n"
        assert tracker.run(["put-project", "--project-id", "p", flag, value]) == 1
        assert f"use one of {valid}" in capsys.readouterr().err


def test_projects_delete_needs_a_terminal_or_yes(token, capsys, monkeypatch) -> None:
    """Without a terminal nothing is deleted unless --yes; the project is read first."""
    from hq_apps.cli.hqctl import admin

    calls = []

    class FakeClient:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return None

        def get_project(self, project_id):
            calls.append("get")
            counts = wire.JobCounts(todo=1, wip=0, done=2, failed=0, reset_exhausted=0)
            return msgspec.structs.replace(_summary(), job_counts=counts)

        def delete_project(self, project_id):
            calls.append("delete")

    monkeypatch.setattr(admin, "open_client", lambda *a, **k: FakeClient())
    monkeypatch.setattr("sys.stdin", io.StringIO("demo\n"))  # not a TTY
    assert run(["projects", "delete", "--project-id", "demo"]) == 1
    assert capsys.readouterr().err == (
        "projects delete: stdin is not a terminal; pass --yes to confirm\n"
    )
    assert calls == ["get"]
    assert run(["projects", "delete", "--project-id", "demo", "--yes"]) == 0
    assert capsys.readouterr().out == (
        "deleted project demo (3 jobs: todo=1 wip=0 done=2 failed=0 reset_exhausted=0)\n"
    )
    assert calls == ["get", "get", "delete"]

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Tty("dem\n"))
    assert run(["projects", "delete", "--project-id", "demo"]) == 1
    err = capsys.readouterr().err
    assert "Type the project ID (demo)" in err and "not confirmed; nothing was deleted" in err
    monkeypatch.setattr("sys.stdin", Tty("demo\n"))
    assert run(["projects", "delete", "--project-id", "demo"]) == 0
    assert calls[-1] == "delete"


def _summary() -> wire.ProjectSummary:
    return wire.ProjectSummary(
        id="demo", status="active", identity_mode="external_id", claim_order="fifo",
        dispatch_qps=None, worker_claim_qps=None, max_jobs_per_claim=256, max_resets=3,
        recommended_lease_seconds=300, client_versions=[], policy_version=1,
        job_counts=wire.JobCounts(todo=0, wip=0, done=0, failed=0, reset_exhausted=0),
        created_at=0, updated_at=1_700_000_000,
    )  # fmt: skip


def test_one_output_style() -> None:
    detail = render.project_detail(_summary())
    assert "created_at                 1970-01-01T00:00:00Z" in detail
    assert "updated_at                 2023-11-14T22:13:20Z" in detail
    assert "client_versions            -" in detail
    user = wire.User(id="u", status="active", roles=[], machine_token_active=True,
                     machine_token_viewable=False, created_at=0, updated_at=0)  # fmt: skip
    rows = render.user_rows([user]).splitlines()[1].split()
    assert rows == ["u", "active", "-", "-", "yes", "no"]


def test_database_errors_name_the_database_not_the_password(monkeypatch) -> None:
    assert describe_dsn("postgresql://bob:s3cret@db.internal:6543/hq") == "bob@db.internal:6543/hq"
    assert describe_dsn("postgresql://postgres@/hq?host=/tmp/sock") == "postgres@/tmp/sock:5432/hq"
    monkeypatch.delenv("HQ_DATABASE_URL", raising=False)
    msg = database_error(
        ["migrate", "--database-url", "postgresql://bob:s3cret@db:5432/hq"],
        ConnectionRefusedError(111, "Connection refused"),
    )
    assert msg.startswith("cannot connect to the database at bob@db:5432/hq: ")
    assert "s3cret" not in msg and "HQ_DATABASE_URL" in msg


def test_tracker_says_it_was_the_database(capsys) -> None:
    url = f"postgresql://bob:s3cret@127.0.0.1:{free_port()}/hq"
    assert tracker.run(["migrate", "--database-url", url]) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    doc = json.loads(line)
    assert doc["error"].startswith("cannot connect to the database at bob@127.0.0.1:")
    assert "s3cret" not in line


def test_port_in_use_is_one_clear_line() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(OSError, match=rf"cannot listen on 127.0.0.1:{port}: .*--listen"):
            check_listen("127.0.0.1", port)
    check_listen("127.0.0.1", port)  # free again


def test_enqueue_source_blames_the_database_not_the_file(tmp_path, capsys) -> None:
    source = tmp_path / "demo.jobs.jsonl.zst"
    source.write_bytes(b"")
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/hq"
    argv = ["enqueue-source", "--database-url", url, "--project-id", "demo", "--input", str(source)]
    assert tracker.run(argv) == 1
    doc = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert doc["error"].startswith("cannot connect to the database at postgres@127.0.0.1:")


@pytest.mark.parametrize("connections", ["0", "1", "16", "17"])
def test_enqueue_source_connections_range(tmp_path, capsys, connections) -> None:
    """Outside 1-16 the flag is refused before anything else; inside it the command goes on
    (here to a database that is not there)."""
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/hq"
    argv = ["enqueue-source", "--database-url", url, "--project-id", "demo",
            "--input", str(tmp_path / "s.zst"), "--connections", connections]  # fmt: skip
    assert tracker.run(argv) == 1
    doc = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    refused = doc["error"] == "enqueue-source: --connections must be between 1 and 16"
    assert refused == (connections in ("0", "17")), doc["error"]
