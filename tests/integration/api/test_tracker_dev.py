"""``tracker dev`` (D5): embedded PostgreSQL under ./data (as root: under
/var/lib/savewebhq-dev, nothing opened to other users), a reusable dev-admin token."""

from __future__ import annotations

import os
import pwd
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from hq_adapters.embedded_root import ROOT_BASE
from tests.support.dev_database import remove_root_dev_database
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


def _banner_value(banner: str, label: str) -> str:
    match = re.search(rf"^  {label}\s+(\S+)$", banner, flags=re.MULTILINE)
    assert match is not None, banner
    return match.group(1)


def _admin(port: int, token: str) -> httpx.Client:
    auth = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=auth)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="root mode: only as root")
def test_dev_as_root_opens_nothing_and_keeps_its_data(tmp_path: Path) -> None:
    """Issue 13 #6: as root the embedded server runs as ``pgserver``; it must not open the
    checkout's parent directories to others nor put its trust-auth socket (database
    superuser) anywhere another user can reach. Started from inside a 0700 directory."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o700)
    work = locked / "checkout"
    work.mkdir()
    work.chmod(0o750)
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [work, *work.parents]}
    port = free_port()
    try:
        proc, banner = _run_dev(work, port)
        try:
            assert "API schema" in banner, banner
            files = Path(_banner_value(banner, "database files:"))
            assert files.is_relative_to(ROOT_BASE) and not files.is_relative_to(work)
            dsn = _banner_value(banner, "database URL:")
            socket_dir = Path(parse_qs(urlsplit(dsn).query)["host"][0])
            assert socket_dir == files  # the socket sits in the private data directory
            info = socket_dir.stat()
            assert info.st_uid == pwd.getpwnam("pgserver").pw_uid, info
            assert not info.st_mode & 0o077, oct(info.st_mode)
            assert (socket_dir / ".s.PGSQL.5432").is_socket()
            for level in (files.parent, ROOT_BASE):  # root's: others may pass, not list
                assert stat.S_IMODE(level.stat().st_mode) == 0o711 and level.stat().st_uid == 0
            token = (work / "data" / "admin.token").read_text().strip()
            with _admin(port, token) as admin:
                r = admin.put("/api/v1/admin/projects/kept", json={"status": "active"})
                assert r.status_code == 200, r.text
                jobs = [{"id": f"j{i}", "value": f"https://example.org/{i}"} for i in range(3)]
                r = admin.post("/api/v1/admin/projects/kept/jobs", json={"jobs": jobs})
                assert r.status_code == 200, r.text
        finally:
            _stop(proc)
        assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes
        assert stat.S_IMODE((work / "data").stat().st_mode) == 0o700

        proc, again = _run_dev(work, port)
        try:
            assert _banner_value(again, "database files:") == str(files)
            with _admin(port, token) as admin:
                r = admin.get("/api/v1/admin/projects/kept")
            assert r.status_code == 200 and r.json()["job_counts"]["todo"] == 3, r.text
        finally:
            _stop(proc)
        assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes
    finally:
        remove_root_dev_database(work)


@pytest.fixture
def dev_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    remove_root_dev_database(tmp_path)


def test_dev_serves_with_a_reused_admin_token(dev_dir: Path) -> None:
    """Also as root (then its database lives under /var/lib/savewebhq-dev)."""
    tmp_path = dev_dir
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
