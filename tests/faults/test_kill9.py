"""``kill -9`` of the tracker while workers claim and complete; restart; drain.

Judged from both sides: the database (every job ``done`` once, the stored outcome names the
attempt that won) and the workers' ledger (no (job, attempt) applied twice, no job completed by
two attempts, and a winning attempt the workers never saw confirmed must be one whose response
was lost in the crash).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.faults.harness import (
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

PROJECT = "kill9"


async def _run(dsn: str, tmp_path: Path, n_jobs: int, kills: int, workers: int) -> dict[str, int]:
    await seed(dsn, PROJECT, n_jobs)
    tracker = Tracker(dsn, tmp_path).start()
    ledger, stop = Ledger(), threading.Event()
    pool = [
        Worker([tracker.url], PROJECT, ledger, stop, name=f"w{i}", lease_seconds=3)
        for i in range(workers)
    ]
    for w in pool:
        w.start()
    try:
        for k in range(kills):
            target = n_jobs * (k + 1) // (kills + 2)
            assert wait_until(lambda t=target: sum(ledger.applied.values()) >= t, 60)
            tracker.kill9()
            time.sleep(0.3)
            tracker.start()
        assert wait_until(lambda: counts(tracker.url, PROJECT)["done"] == n_jobs, 90, 0.5), counts(
            tracker.url, PROJECT
        )
    finally:
        stop.set()
        for w in pool:
            w.join(15)
        final = counts(tracker.url, PROJECT)
        tracker.stop()

    assert final == {"todo": 0, "wip": 0, "done": n_jobs, "failed": 0, "reset_exhausted": 0}
    unconfirmed = assert_exactly_once(ledger, await job_rows(dsn, PROJECT), n_jobs)
    return {
        "jobs": n_jobs,
        "claims": len(ledger.claims),
        "transport_errors": ledger.transport_errors,
        "unconfirmed": unconfirmed,
        "stale": sum(ledger.stale.values()),
        "restarts": tracker.starts - 1,
    }


async def test_kill9_during_claims_and_completions(pg_dsn: str, tmp_path: Path) -> None:
    stats = await _run(pg_dsn, tmp_path, n_jobs=400, kills=1, workers=4)
    print("kill9 short:", stats)
    assert stats["restarts"] == 1


@pytest.mark.slow
async def test_kill9_repeatedly_under_load(pg_dsn: str, tmp_path: Path) -> None:
    stats = await _run(pg_dsn, tmp_path, n_jobs=6000, kills=4, workers=8)
    print("kill9 slow:", stats)
