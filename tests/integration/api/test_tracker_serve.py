"""Main flows against PostgreSQL through a real ``tracker serve`` process over TCP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.unit.api.live import free_port
from tests.unit.api.wire_worker import ApiError, WireWorker, call

pytestmark = pytest.mark.postgres

ADMIN_TOKEN = "pg-admin-token"
WORKER_TOKEN = "pg-worker-token"


def tracker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hq_apps.cli.tracker", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )  # fmt: skip


@contextmanager
def serve(dsn: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hq_apps.cli.tracker", "serve", "-listen", f"127.0.0.1:{port}"],
        env={**os.environ, "HQ_DATABASE_URL": dsn},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "tracker serve did not come up"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        assert proc.wait(15) == 0  # graceful shutdown on SIGTERM


def _token_file(tmp_path: Path, name: str, token: str) -> str:
    path = tmp_path / name
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
async def server(pg_dsn: str, tmp_path: Path) -> Any:
    r = tracker("migrate", "--database-url", pg_dsn)
    assert r.returncode == 0, r.stderr
    for user, roles, token in (("admin", "admin", ADMIN_TOKEN), ("worker", "worker", WORKER_TOKEN)):
        r = tracker("bootstrap-user", "--database-url", pg_dsn, "--user-id", user, "--roles", roles,
                    "--machine-token-file", _token_file(tmp_path, user, token))  # fmt: skip
        assert r.returncode == 0, r.stderr
    r = tracker("put-project", "--project-id", "cli", "--client-versions", "wire/1, wire/2",
                "--dispatch-qps", "", env={"HQ_DATABASE_URL": pg_dsn})  # fmt: skip
    assert r.returncode == 0, r.stderr
    with serve(pg_dsn) as url:
        yield url


def test_main_flows(server: str) -> None:
    with httpx.Client(base_url=server, timeout=15) as http:

        def admin(method: str, path: str, body: Any = None) -> Any:
            return call(http, method, "/api/v1/admin" + path, ADMIN_TOKEN, body)

        summary = admin("GET", "/projects/cli")
        assert (
            summary["client_versions"] == ["wire/1", "wire/2"]
            and summary["max_jobs_per_claim"] == 256
        )
        admin(
            "PUT",
            "/projects/flow",
            {"status": "active", "client_versions": ["wire/1"], "max_resets": 1},
        )
        jobs = [{"id": f"job-{i}", "value": f"https://example.org/{i}"} for i in range(300)]
        assert admin("POST", "/projects/flow/jobs", {"jobs": jobs}) == {
            "project_id": "flow",
            "submitted": 300,
            "inserted": 300,
        }
        assert admin("POST", "/projects/flow/jobs", {"jobs": jobs[:10]})["inserted"] == 0
        with pytest.raises(ApiError) as info:
            admin("POST", "/projects/flow/jobs", {"jobs": [{"id": "job-1", "value": "other"}]})
        assert (info.value.status, info.value.error["code"]) == (409, "identity_conflict")

        def decide(job: dict[str, Any], attempt: int) -> str:
            i = int(job["id"].split("-")[1])
            return (
                "fail"
                if i % 7 == 0
                else "retry"
                if i % 7 == 1 and attempt == 1
                else "extend-complete"
                if i % 7 == 2
                else "complete"
            )

        worker = WireWorker(http, WORKER_TOKEN, "wire/1", "flow", "pgwork1")
        stats = worker.drain(decide, batch=64)
        assert len(stats.seen) == 300
        failed = len([i for i in range(300) if i % 7 == 0])
        counts = admin("GET", "/projects/flow")["job_counts"]
        assert counts == {
            "todo": 0,
            "wip": 0,
            "done": 300 - failed,
            "failed": failed,
            "reset_exhausted": 0,
        }

        page = admin("GET", "/projects/flow/jobs?status=failed&limit=200")
        first = page["jobs"][0]
        assert admin("POST", f"/projects/flow/jobs/{first['job_id']}/requeue") is None
        assert admin("GET", f"/projects/flow/jobs/{first['job_id']}")["status"] == "todo"
        assert worker.drain(lambda job, n: "complete", idle_limit=1).completed == 1

        with pytest.raises(ApiError) as info:
            WireWorker(http, WORKER_TOKEN, "wire/9", "flow", "pgwork2").refresh_policy()
        assert info.value.status == 426

        token = admin("POST", "/users/worker/machine-token")["token"]
        assert call(http, "GET", "/api/v1/whoami", token) == {"user_id": "worker"}
        with pytest.raises(ApiError) as info:
            call(http, "GET", "/api/v1/whoami", WORKER_TOKEN)
        assert info.value.status == 401
        users = admin("GET", "/users")["users"]
        assert [u["id"] for u in users] == ["admin", "worker"]
        assert admin("DELETE", "/projects/flow") is None


def test_rate_limited_project(server: str) -> None:
    with httpx.Client(base_url=server, timeout=15) as http:
        call(http, "PUT", "/api/v1/admin/projects/paced", ADMIN_TOKEN,
             {"status": "active", "client_versions": ["wire/1"], "dispatch_qps": 4})  # fmt: skip
        jobs = [{"id": f"job-{i}", "value": "v"} for i in range(6)]
        call(http, "POST", "/api/v1/admin/projects/paced/jobs", ADMIN_TOKEN, {"jobs": jobs})
        worker = WireWorker(http, WORKER_TOKEN, "wire/1", "paced", "pgwork3")
        # One job per 250 ms: a claim → complete → claim cycle that takes less (anything but a
        # stalled machine) meets an empty bucket and a 429 with retry_after_ms.
        stats = worker.drain(lambda job, n: "complete", idle_limit=1)
        assert stats.completed == 6 and stats.rate_limited >= 1


def test_cli_errors(pg_dsn: str) -> None:
    r = tracker(
        "bootstrap-user",
        "--database-url",
        pg_dsn,
        "--user-id",
        "bad id",
        "--machine-token-file",
        "/nonexistent",
    )
    assert r.returncode == 1
    assert '"msg":"tracker stopped"' in r.stderr
    r = tracker("migrate", "--database-url", pg_dsn)
    assert r.returncode == 0, r.stderr
    r = tracker(
        "put-project", "--database-url", pg_dsn, "--project-id", "p", "--max-resets", "5000"
    )
    assert r.returncode == 1 and "max_resets" in r.stderr
