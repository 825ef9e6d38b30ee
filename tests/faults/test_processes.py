"""``tracker serve --processes N``: one port, N server processes, each with its own pool.

* Both children serve on the one port and each holds its own connections; new connections
  go to the child holding fewer.
* A child killed with SIGKILL is replaced (new pid) while the other keeps serving; the unit
  keeps answering throughout.
* SIGTERM to the parent stops every child within the drain and exits 0.
* A child that cannot start (database unreachable) makes the whole unit exit 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from tests.faults.harness import Tracker, wait_until
from tests.support.databases import TestDatabases
from tests.unit.api.live import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def server_children(pid: int) -> list[psutil.Process]:
    """The spawned server processes (not multiprocessing's resource tracker)."""
    out = []
    for child in psutil.Process(pid).children():
        try:
            cmd = " ".join(child.cmdline())
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue  # a killed child the supervisor has not reaped yet
        if "spawn_main" in cmd:
            out.append(child)
    return out


async def backends(dsn: str) -> int:
    """Other sessions connected to the test database (the trackers' pools)."""
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ))  # fmt: skip
    finally:
        await conn.close()


async def test_processes_share_the_port_restart_and_stop(
    pg_databases: TestDatabases, tmp_path: Path
) -> None:
    dsn = await pg_databases.create("procs")
    tracker = Tracker(dsn, tmp_path, "procs").spawn({"HQ_PROCESSES": "2"})
    try:
        tracker.wait_ready(60)
        assert tracker.proc is not None
        # /healthz answers as soon as one child is up; the unit is up when the parent says so.
        assert wait_until(lambda: "tracker processes started" in tracker.output(), 60)
        assert len(server_children(tracker.proc.pid)) == 2
        first = server_children(tracker.proc.pid)
        # Each child opened its own pool (2 connections kept open each).
        assert await backends(dsn) >= 4
        # The parent hands each connection to the child with fewer open: 20 kept-alive
        # connections are split 10 / 10 (the kernel's split of a shared socket was 42 / 22).
        port = int(tracker.url.rsplit(":", 1)[1])
        clients = [httpx.Client(base_url=tracker.url, timeout=10) for _ in range(20)]
        try:
            for c in clients:
                assert c.get("/healthz").status_code == 200
            held = [
                sum(1 for s in child.net_connections("tcp")
                    if s.laddr and s.laddr.port == port and s.status == psutil.CONN_ESTABLISHED)
                for child in first
            ]  # fmt: skip
            assert held == [10, 10], held
        finally:
            for c in clients:
                c.close()

        victim, survivor = first
        victim.kill()
        failures = 0
        deadline = time.monotonic() + 60  # a loaded CI machine starts interpreters slowly
        while time.monotonic() < deadline:
            try:
                if httpx.get(tracker.url + "/readyz", timeout=5).status_code != 200:
                    failures += 1
            except httpx.TransportError:
                failures += 1
            pids = {c.pid for c in server_children(tracker.proc.pid)}
            if len(pids) == 2 and victim.pid not in pids and survivor.pid in pids:
                break
            time.sleep(0.1)
        else:
            try:
                alive = [(c.pid, c.status()) for c in psutil.Process(tracker.proc.pid).children()]
            except psutil.Error as exc:
                alive = [(tracker.proc.pid, repr(exc))]
            raise AssertionError(
                f"the killed process was not replaced: children {alive}, victim {victim.pid}, "
                f"survivor {survivor.pid}; tracker output ends:\n{tracker.output()[-3000:]}"
            )
        assert failures == 0
        assert "tracker process exited; restarting" in tracker.output()

        children = server_children(tracker.proc.pid)
        t0 = time.monotonic()
        tracker.proc.send_signal(signal.SIGTERM)
        assert tracker.proc.wait(20) == 0
        assert time.monotonic() - t0 < 12
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    finally:
        tracker.stop()
        await pg_databases.drop(dsn)


def test_a_process_that_cannot_start_stops_the_unit() -> None:
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing?connect_timeout=2"
    port = free_port()
    r = subprocess.run(
        [sys.executable, "-m", "hq_apps.cli.tracker", "serve", "--listen", f"127.0.0.1:{port}",
         "--processes", "2"],
        env={**os.environ, "HQ_DATABASE_URL": dead}, capture_output=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1
    assert b"failed to start" in r.stderr and b"tracker stopped" in r.stderr
