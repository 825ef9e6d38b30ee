"""examples/worker.py against the real app (memory store): drains a named project, explains
refusals without a traceback, and Ctrl-C returns the jobs it holds to the queue at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.unit.api.live import ADMIN_TOKEN, WORKER_TOKEN, live_memory_server

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "examples" / "worker.py"


def _admin(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


def _project(admin: httpx.Client, jobs: int, versions: list[str]) -> None:
    r = admin.put("/api/v1/admin/projects/demo", json={
        "status": "active", "identity_mode": "unique_value", "client_versions": versions,
    })  # fmt: skip
    assert r.status_code == 200, r.text
    for start in range(0, jobs, 1000):
        batch = [
            {"value": f"https://example.org/{i}"} for i in range(start, min(jobs, start + 1000))
        ]
        assert (
            admin.post("/api/v1/admin/projects/demo/jobs", json={"jobs": batch}).status_code == 200
        )


def _counts(admin: httpx.Client) -> dict[str, int]:
    return admin.get("/api/v1/admin/projects/demo").json()["job_counts"]


def _worker(url: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    token = tmp_path / "worker.token"
    token.write_text(WORKER_TOKEN)
    token.chmod(0o600)
    env = {**os.environ, "HQ_URL": url, "HQ_MACHINE_TOKEN_FILE": str(token)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), "--project", "demo", *args], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_worker_drains_the_named_project(tmp_path: Path) -> None:
    with live_memory_server() as url, _admin(url) as admin:
        _project(admin, 150, ["example-worker/1.0"])
        proc = _worker(url, tmp_path)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "queue drained: completed 150" in err and "Traceback" not in err
        assert _counts(admin)["done"] == 150


def test_refusal_shows_the_reason_not_a_traceback(tmp_path: Path) -> None:
    with live_memory_server() as url, _admin(url) as admin:
        _project(admin, 1, ["other/2.0"])
        proc = _worker(url, tmp_path)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and "Traceback" not in err
        assert "does not accept client version 'example-worker/1.0'" in err and "other/2.0" in err
    proc = _worker(url, tmp_path)  # the server is gone now
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err
    assert f"cannot reach the tracker at {url}" in err


def test_ctrl_c_returns_held_jobs(tmp_path: Path) -> None:
    with live_memory_server() as url, _admin(url) as admin:
        _project(admin, 3000, ["example-worker/1.0"])
        proc = _worker(url, tmp_path, "--concurrency", "2", "--batch", "200")
        deadline = time.monotonic() + 60
        while _counts(admin)["wip"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _counts(admin)["wip"] > 0
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "held jobs returned to the queue" in err
        counts = _counts(admin)
        assert counts["wip"] == 0, counts  # not left WIP until the leases run out
        assert counts["todo"] > 0 and counts["todo"] + counts["done"] == 3000, counts
