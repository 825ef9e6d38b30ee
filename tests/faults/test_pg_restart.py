"""PostgreSQL stopped, or crashed, and started again under load (our own embedded server, so
we can).

While the database is away every API request must fail *cleanly* — a 5xx JSON error envelope
within a bounded time, no hang — ``/healthz`` stays 200 and ``/readyz`` (when mounted) says 503.
Once PostgreSQL is back the same tracker process recovers by itself and the workers drain the
queue with every job done exactly once. A crash (immediate shutdown, no checkpoint, recovery
from the WAL) may forget the last claims, which commit without waiting for their WAL flush
(migration 0021): their workers' completions are then rejected ``stale_attempt`` and the jobs
handed out again, and still every job is done exactly once and no acknowledged completion
is lost.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from hq_adapters.embedded import EmbeddedPostgres
from hq_adapters.postgres import migrate_dsn
from tests.faults.harness import (
    ADMIN,
    WORKER,
    Ledger,
    Tracker,
    Worker,
    assert_exactly_once,
    counts,
    job_rows,
    seed,
    wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

PROJECT = "pgrestart"
FAIL_FAST_S = 5.0  # an API request during the outage must be answered within this
RECOVER_S = 20.0  # after PostgreSQL is back, the first 200 must come within this
ENVELOPE_KEYS = {"code", "message", "retryable", "retry_after_ms", "details"}


def _probe_outage(url: str) -> list[tuple[str, int, float]]:
    """Requests of each kind while PostgreSQL is down: (path, status, seconds)."""
    claim = {"worker_id": "probe", "max_jobs": 1, "lease_seconds": 30, "policy_version": 1}
    probes = [
        ("GET", "/api/v1/whoami", ADMIN, None),
        ("GET", f"/api/v1/admin/projects/{PROJECT}", ADMIN, None),
        ("POST", f"/api/v1/projects/{PROJECT}/jobs/claim", WORKER, claim),
    ]
    seen = []
    with httpx.Client(timeout=FAIL_FAST_S + 30) as client:
        for method, path, headers, body in probes:
            t0 = time.monotonic()
            r = client.request(method, url + path, headers=headers, json=body)
            took = time.monotonic() - t0
            seen.append((path, r.status_code, took))
            assert 500 <= r.status_code < 600, (path, r.status_code, r.text)
            assert r.headers["content-type"] == "application/json"
            assert "no-store" in r.headers["cache-control"]
            err = r.json()["error"]
            assert set(err) == ENVELOPE_KEYS and err["code"] == "internal_error", err
            assert took < FAIL_FAST_S, (path, took)
        assert client.get(url + "/healthz").status_code == 200
        ready = client.get(url + "/readyz")
        if ready.status_code != 404:  # mounted by the lead (see readiness.py)
            assert ready.status_code == 503, ready.text
            assert set(ready.json()["error"]) == ENVELOPE_KEYS
    return seen


def _crash(pg: EmbeddedPostgres) -> None:
    """Immediate shutdown (``pg_ctl stop -m immediate``'s signal): no checkpoint, no flush of
    what asynchronous commits left in the WAL buffers; the next start recovers from the WAL."""
    pid = int((pg.data_dir / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGQUIT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("PostgreSQL did not stop")
    pg.stop()  # the embedded handle: its server is gone already


async def _run(
    tmp_path: Path, n_jobs: int, outages: int, down_s: float, crash: bool = False
) -> dict[str, object]:
    # not under tmp_path: as root, pgserver runs PostgreSQL as its own user, which needs a
    # path it may enter (the same way tests/support/databases.py creates its server)
    pg_dir = Path(tempfile.mkdtemp(prefix="rel-pg-"))
    pg = EmbeddedPostgres(pg_dir / "data", cleanup_mode="stop").start()
    try:
        dsn = await pg.ensure_database("rel_restart")
        await migrate_dsn(dsn, int(time.time()))
        await seed(dsn, PROJECT, n_jobs)
        tracker = Tracker(dsn, tmp_path).start()
        ledger, stop = Ledger(), threading.Event()
        pool = [Worker([tracker.url], PROJECT, ledger, stop, name=f"w{i}", lease_seconds=4)
                for i in range(4)]  # fmt: skip
        for w in pool:
            w.start()
        probes, recoveries = [], []
        try:
            for k in range(outages):
                target = n_jobs * (k + 1) // (outages + 2)
                assert wait_until(lambda t=target: sum(ledger.applied.values()) >= t, 60)
                if crash:
                    _crash(pg)
                else:
                    pg.stop()
                time.sleep(0.2)
                probes += _probe_outage(tracker.url)
                time.sleep(down_s)
                pg.start()
                t0 = time.monotonic()
                assert wait_until(
                    lambda: httpx.get(tracker.url + "/api/v1/whoami", headers=ADMIN,
                                      timeout=5).status_code == 200,
                    RECOVER_S, 0.2,
                ), "tracker did not recover after PostgreSQL came back"  # fmt: skip
                recoveries.append(round(time.monotonic() - t0, 2))
                ready = httpx.get(tracker.url + "/readyz", timeout=5)
                assert ready.status_code in (200, 404), ready.text
            assert wait_until(lambda: counts(tracker.url, PROJECT)["done"] == n_jobs, 90, 0.5)
            assert tracker.proc is not None and tracker.proc.poll() is None  # same process
        finally:
            stop.set()
            for w in pool:
                w.join(15)
            tracker.stop()
        unconfirmed = assert_exactly_once(ledger, await job_rows(dsn, PROJECT), n_jobs)
        return {
            "jobs": n_jobs,
            "outages": outages,
            "max_probe_s": round(max(p[2] for p in probes), 3),
            "recover_s": recoveries,
            "5xx_seen_by_workers": sum(n for s, n in ledger.statuses.items() if s >= 500),
            "unconfirmed": unconfirmed,
            "stale_completions": sum(ledger.stale.values()),
        }
    finally:
        await asyncio.sleep(0)
        pg.stop()
        shutil.rmtree(pg_dir, ignore_errors=True)


async def test_postgres_restart_under_load(tmp_path: Path) -> None:
    stats = await _run(tmp_path, n_jobs=300, outages=1, down_s=1.0)
    print("pg restart short:", stats)


async def test_postgres_crash_under_load(tmp_path: Path) -> None:
    stats = await _run(tmp_path, n_jobs=300, outages=1, down_s=1.0, crash=True)
    print("pg crash:", stats)


@pytest.mark.slow
async def test_postgres_restarted_repeatedly(tmp_path: Path) -> None:
    stats = await _run(tmp_path, n_jobs=4000, outages=3, down_s=4.0)
    print("pg restart slow:", stats)
