"""Database failover drill: a streaming standby built from the system PostgreSQL 15 binaries,
the tracker on a multi-host URL with ``target_session_attrs=read-write``, the primary stopped
hard under worker load and the standby promoted (docs/operations.md, "High availability").

* Synchronous replication: every commit the tracker acknowledged is on the standby, so the
  drill must show 0 jobs lost, every job done by exactly one attempt, no attempt applied twice.
* Asynchronous replication: the last acknowledged commits may be missing after promotion. What a
  worker can observe is at-least-once: a completion it saw ``applied`` can be undone and the job
  handed out again, but no attempt is ever applied twice and every job still ends done once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest

from hq_adapters.postgres import migrate_dsn
from tests.faults.harness import (
    ADMIN,
    Ledger,
    Tracker,
    Worker,
    assert_exactly_once,
    counts,
    job_rows,
    seed,
    wait_until,
)
from tests.unit.api.live import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="needs PostgreSQL 15 binaries"),
]
PROJECT = "failover"
N_JOBS = 1500


class Cluster:
    """A primary and one streaming standby in a private temporary directory."""

    def __init__(self, root: Path, synchronous: bool) -> None:
        self.root = root
        self.synchronous = synchronous
        self.ports = {"primary": free_port(), "standby": free_port()}

    def _run(self, *argv: str) -> str:
        cmd = [str(PG_BIN / argv[0]), *argv[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{argv}: {r.stdout}\n{r.stderr}"
        return r.stdout

    def dsn(self, node: str, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports[node]}/{db}"

    def multi_host(self, db: str) -> str:
        p, s = self.ports["primary"], self.ports["standby"]
        return f"postgresql://postgres@127.0.0.1:{p},127.0.0.1:{s}/{db}?target_session_attrs=read-write"

    def _conf(self, node: str, text: str) -> None:
        path = self.root / node / "postgresql.auto.conf"
        with open(path, "a") as f:
            f.write(text)

    def start(self, node: str) -> None:
        self._run("pg_ctl", "-D", str(self.root / node), "-l", str(self.root / f"{node}.log"), "-w", "start")

    def build(self) -> None:
        primary = self.root / "primary"
        self._run("initdb", "-D", str(primary), "-U", "postgres", "-A", "trust", "--no-sync")
        self._conf("primary", f"""
port = {self.ports["primary"]}
listen_addresses = '127.0.0.1'
unix_socket_directories = '{self.root}'
wal_level = replica
max_wal_senders = 4
wal_keep_size = '256MB'
""")
        self.start("primary")
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.ports["primary"]), "-U",
                  "postgres", "-D", str(self.root / "standby"), "-R", "-X", "stream")  # fmt: skip
        self._conf("standby", f"""
port = {self.ports["standby"]}
primary_conninfo = 'host=127.0.0.1 port={self.ports["primary"]} user=postgres application_name=standby1'
""")
        self.start("standby")
        if self.synchronous:
            # Only the primary names a synchronous standby (set after the base backup, so the
            # standby does not inherit it): once promoted it must not wait for a standby it no
            # longer has.
            self._conf("primary", "synchronous_standby_names = 'standby1'\n")
            self._run("pg_ctl", "-D", str(primary), "reload")
        want = "sync" if self.synchronous else "async"
        assert wait_until(lambda: asyncio.run(self._sync_state()) == want, 30, 0.2), want

    async def _sync_state(self) -> str | None:
        conn = await asyncpg.connect(self.dsn("primary"))
        try:
            return await conn.fetchval(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'"
            )
        finally:
            await conn.close()

    def kill_primary(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "primary"), "-m", "immediate", "stop")

    def promote(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "standby"), "-w", "promote")

    def stop(self) -> None:
        for node in ("primary", "standby"):
            if (self.root / node / "postmaster.pid").exists():
                with contextlib.suppress(AssertionError):
                    self._run("pg_ctl", "-D", str(self.root / node), "-m", "immediate", "stop")


@contextmanager
def cluster(synchronous: bool) -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="hq-failover-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    c = Cluster(root, synchronous)
    try:
        c.build()
        yield c
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)


def _drill(tmp_path: Path, synchronous: bool) -> tuple[Ledger, list[dict], dict[str, object]]:
    with cluster(synchronous) as c:

        async def prepare() -> None:
            conn = await asyncpg.connect(c.dsn("primary"))
            try:
                await conn.execute("CREATE DATABASE hq")
            finally:
                await conn.close()
            await migrate_dsn(c.dsn("primary", "hq"), int(time.time()))
            await seed(c.dsn("primary", "hq"), PROJECT, N_JOBS)

        asyncio.run(prepare())
        tracker = Tracker(c.multi_host("hq"), tmp_path).start()
        ledger, stop = Ledger(), threading.Event()
        pool = [Worker([tracker.url], PROJECT, ledger, stop, name=f"w{i}", lease_seconds=5)
                for i in range(4)]  # fmt: skip
        for w in pool:
            w.start()
        try:
            assert wait_until(lambda: sum(ledger.applied.values()) >= N_JOBS // 3, 120)
            t0 = time.monotonic()
            c.kill_primary()
            c.promote()
            assert wait_until(
                lambda: httpx.get(tracker.url + "/api/v1/whoami", headers=ADMIN,
                                  timeout=5).status_code == 200, 60, 0.05,
            ), "tracker did not reach the promoted standby"  # fmt: skip
            outage = time.monotonic() - t0
            assert wait_until(lambda: counts(tracker.url, PROJECT)["done"] == N_JOBS, 240, 0.5)
        finally:
            stop.set()
            for w in pool:
                w.join(15)
            tracker.stop()
        rows = asyncio.run(job_rows(c.dsn("standby", "hq"), PROJECT))
        stats = {
            "jobs": N_JOBS,
            "outage_s": round(outage, 2),
            "5xx_seen_by_workers": sum(n for s, n in ledger.statuses.items() if s >= 500),
        }
        return ledger, rows, stats


def test_synchronous_failover_loses_nothing(tmp_path: Path) -> None:
    ledger, rows, stats = _drill(tmp_path, synchronous=True)
    stats["unconfirmed"] = assert_exactly_once(ledger, rows, N_JOBS)
    print("failover (synchronous):", stats)


def test_asynchronous_failover_is_at_least_once(tmp_path: Path) -> None:
    ledger, rows, stats = _drill(tmp_path, synchronous=False)
    twice = {key: n for key, n in ledger.applied.items() if n > 1}
    assert not twice, f"attempts applied more than once: {twice}"
    assert len(rows) == N_JOBS and all(r["status"] == "done" and r["done_attempt"] for r in rows)
    claimed = {(job, attempt) for job, attempt, _, _ in ledger.claims}
    assert {(r["job_id"], r["done_attempt"]) for r in rows} <= claimed | set(ledger.lost)
    redone = {job: a for job, a in ledger.applied_by_job().items() if len(a) > 1}
    for job, attempts in redone.items():  # an acknowledged completion the promotion undid
        assert len(set(attempts)) == len(attempts), (job, attempts)
    stats["acknowledged_then_redone"] = len(redone)
    print("failover (asynchronous):", stats)
