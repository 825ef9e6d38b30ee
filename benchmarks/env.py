"""The benchmark's environment: a fresh ``bench_*`` database, a ``tracker serve`` subprocess
(after ``tracker migrate`` and ``bootstrap-user`` with a 0600 token file) and machine facts."""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from benchmarks.loadgen.admin import Target

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_USER = "bench"


def tracker_command() -> list[str]:
    """The ``tracker`` entry point of this virtualenv, run directly so its pid is the server's."""
    script = Path(sys.executable).parent / "tracker"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hq_apps.cli.tracker"]


def with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def bench_database(admin_dsn: str = ADMIN_DSN) -> AsyncIterator[str]:
    """Create ``bench_<random>`` on the server of ``admin_dsn``; drop it afterwards."""
    name = f"bench_{int(time.time())}_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield with_database(admin_dsn, name)
    finally:
        conn = await asyncpg.connect(admin_dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def _check(cmd: Sequence[str]) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {done.stderr.strip()[-800:]}")


def prepare_database(dsn: str, workdir: Path) -> str:
    """Migrate, write a 0600 token file, bootstrap the admin+worker user; returns the token."""
    token = "hq_" + secrets.token_urlsafe(32)
    path = workdir / "bench.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    tracker = tracker_command()
    _check([*tracker, "migrate", "--database-url", dsn])
    _check(
        [
            *tracker,
            "bootstrap-user",
            "--database-url",
            dsn,
            "--user-id",
            BENCH_USER,
            "--roles",
            "admin,worker",
            "--machine-token-file",
            str(path),
        ]
    )
    return token


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    target: Target
    log_path: Path


async def _wait_healthy(
    host: str, port: int, process: subprocess.Popen[bytes], timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tracker exited with {process.returncode}")
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            line = await reader.readline()
            writer.close()
            if b" 200 " in line:
                return
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("tracker did not become healthy")


@asynccontextmanager
async def tracker_server(
    dsn: str, token: str, workdir: Path, command: Sequence[str] | None = None, name: str = "tracker"
) -> AsyncIterator[Server]:
    """``tracker serve`` (or ``command``) on a free loopback port; SIGINT and wait at exit."""
    port = free_port()
    log_path = workdir / f"{name}.log"
    cmd = list(command) if command else [*tracker_command(), "serve"]
    cmd += ["--database-url", dsn, "--listen", f"127.0.0.1:{port}"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    try:
        await _wait_healthy("127.0.0.1", port, process)
        yield Server(process, Target("127.0.0.1", port, token, process.pid), log_path)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def workdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="hq-bench-")


async def machine_facts(dsn: str) -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    conn = await asyncpg.connect(dsn)
    try:
        pg = await conn.fetchval("SHOW server_version")
        settings = dict(
            await conn.fetch(
                "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])",
                ["synchronous_commit", "fsync", "shared_buffers", "max_connections"],
            )
        )
    finally:
        await conn.close()
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "postgresql": pg,
        "pg_settings": ", ".join(f"{k}={v}" for k, v in sorted(settings.items())),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load_at_start": load_average(),
    }


def load_average() -> str:
    """1/5/15-minute load averages: how much else the shared machine was doing."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"
