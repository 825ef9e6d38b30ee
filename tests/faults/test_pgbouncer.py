"""Real ``tracker serve`` processes behind a real PgBouncer in transaction mode.

Two trackers × two processes × up to 16 pooled connections each (64 client connections) share a
PgBouncer server pool of 8: every statement of a request may run on another server connection
than the one before. 240 concurrent workers claim, extend, fail (retryably) and complete, and
some abandon short leases; the background sweep alone must reset leases that expire while
nobody claims. Judged: 0 HTTP errors (any non-200 or transport error), every job ``done`` by
exactly one attempt, the one the database recorded, and PostgreSQL never saw more server
connections than the PgBouncer pool.

A pool in the default (direct) mode pointed at PgBouncer fails at start-up with a message that
names ``HQ_DATABASE_POOLER=transaction``, whether PgBouncer rejects the startup parameter or was
told to ignore it.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import psutil
import pytest

from hq_adapters.postgres import PoolerMismatch, connect
from hq_domain.clock import SystemClock
from tests.faults.harness import WORKER, Tracker, job_rows, seed
from tests.support.databases import TestDatabases
from tests.support.pgbouncer import PgBouncer

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

SERVER_POOL = 8
TRACKERS = 2
PROCESSES = 2
WORKERS = 240
N_JOBS = 2000
PROJECT = "pgb"
SWEPT = 30  # jobs abandoned before the run, to be reset by the background sweep alone
# Every connection of each pool in use (worker lanes = the pool's 4, not cores / processes),
# so the trackers open more client connections than PgBouncer's server pool.
POOLED = {"HQ_DATABASE_POOLER": "transaction", "HQ_PROCESSES": str(PROCESSES),
          "HQ_WORKER_LANES": "4"}  # fmt: skip


def _database(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/")


class Run:
    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.errors: Counter[str] = Counter()
        self.applied: Counter[tuple[int, str]] = Counter()
        self.requests: Counter[str] = Counter()
        self.done = asyncio.Event()

    async def post(self, client: httpx.AsyncClient, base: str, op: str,
                   body: dict[str, Any]) -> dict[str, Any] | None:  # fmt: skip
        self.requests[op] += 1
        try:
            r = await client.post(f"{base}/api/v1/projects/{PROJECT}/jobs/{op}", json=body,
                                  headers=WORKER, timeout=30)  # fmt: skip
        except httpx.TransportError as exc:
            self.errors[f"{op}: {type(exc).__name__}"] += 1
            return None
        if r.status_code != 200:
            self.errors[f"{op}: HTTP {r.status_code} {r.text[:200]}"] += 1
            return None
        return r.json()

    async def worker(self, client: httpx.AsyncClient, index: int) -> None:
        rng = random.Random(index)
        base = self.urls[index % len(self.urls)]
        name = f"w{index}"
        while not self.done.is_set():
            abandon = rng.random() < 0.03
            claim = {"worker_id": name, "max_jobs": rng.choice((1, 4, 8)),
                     "lease_seconds": 2 if abandon else 120, "policy_version": 1}  # fmt: skip
            out = await self.post(client, base, "claim", claim)
            jobs = [] if out is None else out["jobs"]
            if not jobs:
                await asyncio.sleep(0.3)
                continue
            if abandon:  # the worker "dies": its lease expires and a sweep resets the job
                continue
            refs = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"]} for j in jobs]
            if rng.random() < 0.2:
                ext = {"worker_id": name, "extend_seconds": 120, "items": refs}
                await self.post(client, base, "extend-lease", ext)
            failing = [r for r in refs if rng.random() < 0.1]
            if failing:
                items = [{**r, "retryable": True,
                          "error": {"code": "pgb", "message": "retry me", "details": None}}
                         for r in failing]  # fmt: skip
                await self.post(client, base, "fail", {"worker_id": name, "items": items})
            rest = [r for r in refs if r not in failing]
            if rest:
                items = [{**r, "outcome": {"kind": "success", "code": 200, "uri": None,
                                           "meta": {"attempt": r["attempt_id"]}},
                          "artifact_receipts": None} for r in rest]  # fmt: skip
                out = await self.post(client, base, "complete", {"worker_id": name, "items": items})
                for res in [] if out is None else out["results"]:
                    if res["status"] == "applied":
                        self.applied[(res["job_id"], res["attempt_id"])] += 1
                if sum(self.applied.values()) >= N_JOBS:
                    self.done.set()


class Sampler:
    """Peak client connections into PgBouncer and server connections into PostgreSQL."""

    def __init__(self, bouncer_port: int, dsn: str) -> None:
        self.port = bouncer_port
        self.dsn = dsn
        self.max_clients = 0
        self.max_servers = 0

    async def run(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            while not stop.is_set():
                clients = sum(1 for c in psutil.net_connections("tcp4")
                              if c.laddr and c.laddr.port == self.port
                              and c.status == psutil.CONN_ESTABLISHED)  # fmt: skip
                servers = await conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                self.max_clients = max(self.max_clients, clients)
                self.max_servers = max(self.max_servers, servers)
                await asyncio.sleep(0.2)
        finally:
            await conn.close()


async def _db_counts(dsn: str, sql: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(sql, PROJECT))
    finally:
        await conn.close()


async def _wait_swept(dsn: str, timeout: float) -> bool:
    sql = ("SELECT count(*) FROM tracker_jobs WHERE project_id = $1 AND status = 'todo' "
           "AND reset_count = 1")  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await _db_counts(dsn, sql) == SWEPT:
            return True
        await asyncio.sleep(0.25)
    return False


async def test_trackers_behind_pgbouncer_transaction_mode(
    pg_databases: TestDatabases, tmp_path: Path
) -> None:
    dsn = await pg_databases.create("pgb")
    await seed(dsn, PROJECT, N_JOBS)
    bouncer = PgBouncer(pg_databases.server.dsn, pool_size=SERVER_POOL).start()
    trackers: list[Tracker] = []
    try:
        url = bouncer.url(_database(dsn))
        migrate = subprocess.run(
            [sys.executable, "-m", "hq_apps.cli.tracker", "migrate"],
            env={**os.environ, "HQ_DATABASE_URL": url}, capture_output=True, timeout=60,
        )  # fmt: skip
        assert migrate.returncode == 0, migrate.stderr.decode()[-2000:]
        trackers = [Tracker(url, tmp_path, f"t{i}").spawn(POOLED) for i in range(TRACKERS)]
        for t in trackers:
            t.wait_ready(60)
        # Keep-alive shorter than the server's 60 s idle timeout: no reuse-while-closing race.
        limits = httpx.Limits(
            max_connections=WORKERS + 16, max_keepalive_connections=WORKERS, keepalive_expiry=20
        )
        async with httpx.AsyncClient(limits=limits) as client:
            for t in trackers:
                assert (await client.get(t.url + "/readyz")).status_code == 200
            run = Run([t.url for t in trackers])
            # Leases that expire while nobody claims: only the background sweep resets them.
            claim = {"worker_id": "abandoner", "max_jobs": SWEPT, "lease_seconds": 1,
                     "policy_version": 1}  # fmt: skip
            out = await run.post(client, trackers[0].url, "claim", claim)
            assert out is not None and len(out["jobs"]) == SWEPT
            assert await _wait_swept(dsn, 20), "the background sweep did not reset the leases"

            sampler = Sampler(bouncer.port, dsn)
            stop_sampling = asyncio.Event()
            sampling = asyncio.create_task(sampler.run(stop_sampling))
            started = time.monotonic()
            workers = [asyncio.create_task(run.worker(client, i)) for i in range(WORKERS)]
            try:
                await asyncio.wait_for(run.done.wait(), 150)
            finally:
                run.done.set()
                await asyncio.gather(*workers)
                stop_sampling.set()
                await sampling
            elapsed = time.monotonic() - started
            for t in trackers:
                assert (await client.get(t.url + "/readyz")).status_code == 200
    finally:
        for t in trackers:
            t.stop()
        bouncer.stop()
    print(f"\npgbouncer run: {N_JOBS} jobs, {WORKERS} workers, {dict(run.requests)} in "
          f"{elapsed:.1f}s; peak client conns {sampler.max_clients}, "
          f"server conns {sampler.max_servers}")  # fmt: skip
    assert not run.errors, f"HTTP errors through PgBouncer: {run.errors.most_common(5)}"
    assert not [k for k, n in run.applied.items() if n > 1], "an attempt was applied twice"
    per_job = Counter(job for job, _ in run.applied)
    assert len(per_job) == N_JOBS and set(per_job.values()) == {1}
    rows = await job_rows(dsn, PROJECT)
    assert len(rows) == N_JOBS
    winners = {job: attempt for job, attempt in run.applied}
    for row in rows:
        assert row["status"] == "done", row
        assert row["done_attempt"] == winners[row["job_id"]], row
    # The pooler was the bottleneck it is meant to be: more clients than server connections.
    assert sampler.max_servers <= SERVER_POOL + 1  # + the sampler's own direct connection
    assert sampler.max_clients > SERVER_POOL
    for t in trackers:
        assert "Traceback" not in t.output(), t.output()[-3000:]
    await pg_databases.drop(dsn)


async def test_direct_mode_behind_pgbouncer_fails_clearly(pg_databases: TestDatabases) -> None:
    dsn = await pg_databases.create("pgbmis")
    database = _database(dsn)
    strict = PgBouncer(pg_databases.server.dsn, pool_size=2).start()
    lenient = PgBouncer(pg_databases.server.dsn, pool_size=2,
                        ignore_startup_parameters="plan_cache_mode").start()  # fmt: skip
    try:
        for bouncer in (strict, lenient):
            with pytest.raises(PoolerMismatch, match="HQ_DATABASE_POOLER=transaction"):
                await connect(bouncer.url(database), SystemClock(), min_size=1, max_size=2)
            store = await connect(bouncer.url(database), SystemClock(), pooler="transaction",
                                  min_size=1, max_size=2)  # fmt: skip
            try:
                await store.ping(2.0)
            finally:
                await store.close()
    finally:
        strict.stop()
        lenient.stop()
        await pg_databases.drop(dsn)


async def test_enqueue_source_on_two_connections_behind_pgbouncer(
    pg_databases: TestDatabases, tmp_path: Path
) -> None:
    """``tracker enqueue-source --connections 2`` through PgBouncer (pool of 2): its commit
    line keeps no session state (reserved ids, the line's lock_timeout are per statement or
    transaction), so a fresh import and a re-run of the same file land every job once, with
    job ids in file order."""
    from hq_adapters.sourcefile import SourceWriter
    from hq_domain.jobs import JobSpec

    dsn = await pg_databases.create("pgbimp")
    bouncer = PgBouncer(pg_databases.server.dsn, pool_size=2).start()
    n = 35_000  # several 10,000-job groups in flight on the two connections
    values = [f"https://example.org/imp/{i}" for i in range(n)]
    path = tmp_path / "imp.jobs.jsonl.zst"
    with SourceWriter(str(path)) as writer:
        for i, value in enumerate(values):
            writer.write(JobSpec(value=value, id=f"imp{i}"))
    env = {**os.environ, "HQ_DATABASE_URL": bouncer.url(_database(dsn)),
           "HQ_DATABASE_POOLER": "transaction"}  # fmt: skip
    tracker = [sys.executable, "-m", "hq_apps.cli.tracker"]
    try:
        for args in (["migrate"], ["put-project", "--project-id", "imp"]):
            done = subprocess.run([*tracker, *args], env=env, capture_output=True, timeout=60)
            assert done.returncode == 0, done.stderr.decode()[-2000:]
        for _ in range(2):  # fresh, then the runbook's safe re-run
            done = subprocess.run(
                [*tracker, "enqueue-source", "--project-id", "imp", "--input", str(path),
                 "--connections", "2"],
                env=env, capture_output=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert [r["value"] for r in await job_rows(dsn, "imp")] == values
    finally:
        bouncer.stop()
        await pg_databases.drop(dsn)
