"""``tracker dev`` (D5): embedded PostgreSQL under ./data, a reusable dev-admin token."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.unit.api.live import free_port

pytestmark = pytest.mark.postgres


def _run_dev(cwd: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hq_apps.cli.tracker", "dev"],
        cwd=cwd, env={**os.environ, "HQ_LISTEN": f"127.0.0.1:{port}"},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    banner = []
    deadline = time.monotonic() + 90
    for line in proc.stdout:
        banner.append(line)
        if "API schema" in line or time.monotonic() > deadline:
            break
    return proc, "".join(banner)


def test_dev_refuses_to_run_as_root(tmp_path: Path) -> None:
    """Issue 13 #6: as root, the embedded server opened parent directories to others and could
    put its trust-auth socket in a shared directory; tracker dev now refuses before starting."""
    if os.geteuid() != 0:
        pytest.skip("only meaningful as root")
    r = subprocess.run(
        [sys.executable, "-m", "hq_apps.cli.tracker", "dev", "--listen", "127.0.0.1:0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0 and "refusing to run as root" in r.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="tracker dev refuses to run as root")
def test_dev_serves_with_a_reused_admin_token(tmp_path: Path) -> None:
    port = free_port()
    proc, banner = _run_dev(tmp_path, port)
    try:
        assert f"http://127.0.0.1:{port}" in banner and "admin.token" in banner and "curl" in banner
        token_file = tmp_path / "data" / "admin.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}
        )
        assert r.json() == {"user_id": "dev-admin"}
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/admin/users",
            headers={"Authorization": f"Bearer {token}"},
        )
        (user,) = r.json()["users"]
        assert user["roles"] == ["admin", "worker"] and user["status"] == "active"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    proc, _ = _run_dev(tmp_path, port)
    try:
        assert (tmp_path / "data" / "admin.token").read_text().strip() == token
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
