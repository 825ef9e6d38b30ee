"""Concurrency on a real PostgreSQL: claimers on separate connections never share a job (D6),
and dispatch-limited claims never exceed the bucket (D8)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from hq_adapters.postgres import connect
from hq_domain.clock import ManualClock, SystemClock
from hq_domain.errors import ProjectDispatchRateLimited
from hq_domain.jobs import JobSpec, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem

pytestmark = pytest.mark.postgres

CLAIMERS = 16


async def _setup(dsn, clock, n_jobs: int, **put_kw):
    admin = await connect(dsn, clock, min_size=1, max_size=2)
    await admin.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    await admin.put_project("p", ProjectPut(status="active", **put_kw))
    for start in range(0, n_jobs, 1000):
        batch = [JobSpec(f"v{i}", id=f"j{i}") for i in range(start, min(n_jobs, start + 1000))]
        await admin.enqueue("p", batch)
    return admin


async def test_concurrent_claimers_take_every_job_exactly_once(pg_dsn) -> None:
    clock = SystemClock()
    n_jobs = 5000
    admin = await _setup(pg_dsn, clock, n_jobs)
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(CLAIMERS)]
    claimed: list[int] = []

    async def worker(i: int, store) -> None:
        while True:
            result = await store.claim("u", "p", ClaimRequest(f"w{i}", 37, 600, (), 1))
            if not result.jobs:
                return
            claimed.extend(j.job_id for j in result.jobs)
            # finish half of them so completions race with claims too
            done = [
                CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None)
                for j in result.jobs[::2]
            ]
            results = await store.complete("u", "p", f"w{i}", done)
            assert all(r.applied for r in results)

    try:
        await asyncio.gather(*(worker(i, s) for i, s in enumerate(stores)))
    finally:
        for s in stores:
            await s.close()
    dupes = [job for job, n in Counter(claimed).items() if n > 1]
    assert not dupes
    assert len(claimed) == n_jobs
    summary = await admin.get_project("p")
    counts = summary.job_counts
    assert counts.todo == 0 and counts.done + counts.wip == n_jobs
    await admin.close()


async def test_concurrent_dispatch_claims_never_exceed_the_bucket(pg_dsn) -> None:
    """Frozen time: a full bucket of capacity 200 (qps 2000) is handed out exactly once."""
    clock = ManualClock()
    admin = await _setup(pg_dsn, clock, 2000, dispatch_qps=2000.0)
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(CLAIMERS)]

    async def one(i: int, store) -> int:
        try:
            result = await store.claim("u", "p", ClaimRequest(f"w{i}", 50, 600, (), 1))
        except ProjectDispatchRateLimited:
            return 0
        return len(result.jobs)

    try:
        for _round in range(3):
            got = await asyncio.gather(*(one(i, s) for i, s in enumerate(stores)))
            assert sum(got) == 200
            clock.advance(0.1)  # 0.1 s × 2000 qps = one more full bucket
    finally:
        for s in stores:
            await s.close()
    await admin.close()


async def test_dispatch_rate_holds_on_the_wall_clock(pg_dsn) -> None:
    """Real time, 16 claimers hammering a qps-50 project: dispatched ≤ 1 + qps × elapsed."""
    qps = 50.0
    clock = SystemClock()
    admin = await _setup(pg_dsn, clock, 2000, dispatch_qps=qps)
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(CLAIMERS)]
    total = 0
    started = time.time()
    deadline = started + 1.0

    async def worker(i: int, store) -> None:
        nonlocal total
        while time.time() < deadline:
            try:
                result = await store.claim("u", "p", ClaimRequest(f"w{i}", 10, 600, (), 1))
                total += len(result.jobs)
            except ProjectDispatchRateLimited as exc:
                await asyncio.sleep(min(exc.retry_after_ms, 20) / 1000)

    try:
        await asyncio.gather(*(worker(i, s) for i, s in enumerate(stores)))
    finally:
        for s in stores:
            await s.close()
    elapsed = time.time() - started
    assert total <= 1 + qps * elapsed
    assert total >= qps * elapsed * 0.3  # and the limiter does not starve claimers
    await admin.close()


async def test_overlapping_batches_in_opposite_orders_do_not_deadlock(pg_dsn) -> None:
    """A heartbeat extend racing a complete/fail over the same attempts, listed in opposite
    orders: rows are locked in job_id order, so neither statement deadlocks."""
    from hq_domain.jobs import ExecutionError
    from hq_domain.worker import AttemptRef, FailItem

    clock = SystemClock()
    admin = await _setup(pg_dsn, clock, 200)
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(3)]
    try:
        for _round in range(10):
            jobs = (await admin.claim("u", "p", ClaimRequest("w", 20, 600, (), 1))).jobs
            if not jobs:
                break
            refs = [AttemptRef(j.job_id, j.attempt_id) for j in jobs]
            done = [CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in jobs]
            failed = [FailItem(j.job_id, j.attempt_id, True, ExecutionError("x")) for j in jobs]
            ext, comp, fail = await asyncio.gather(
                stores[0].extend_lease("u", "p", "w", 60, refs),
                stores[1].complete("u", "p", "w", done[::-1]),
                stores[2].fail("u", "p", "w", failed[len(failed) // 2:] + failed[: len(failed) // 2]),
            )
            # every attempt is finished exactly once, by the complete or the fail
            finished = [r.job_id for r in comp + fail if r.applied]
            assert sorted(finished) == sorted(j.job_id for j in jobs)
            assert len(ext) == len(jobs)
    finally:
        for s in stores:
            await s.close()
        await admin.close()


class TickingClock:
    """Every reading moves time forward by ``step_ns``: time is defined by the reads alone, so
    the bound below is exact however the claims interleave."""

    def __init__(self, start_ns: int = 1_700_000_000 * 10**9, step_ns: int = 1_000_000) -> None:
        self.now = start_ns
        self.first = start_ns
        self.step = step_ns

    def now_ns(self) -> int:
        self.now += self.step
        return self.now


async def test_concurrent_claims_with_a_moving_clock_stay_within_the_bucket(pg_dsn) -> None:
    """D8: with 16 concurrent claimers the dispatched total never exceeds
    capacity + qps × (time elapsed on the clock). A claim that used a clock reading taken
    before it waited for the project lock would mint tokens twice and break this bound."""
    qps = 100.0  # one token per 10 clock readings
    clock = TickingClock()
    admin = await _setup(pg_dsn, ManualClock(clock.first), 3000, dispatch_qps=qps)
    stores = [await connect(pg_dsn, clock, min_size=1, max_size=1) for _ in range(CLAIMERS)]
    total = 0

    async def worker(i: int, store) -> None:
        nonlocal total
        for _ in range(25):
            try:
                result = await store.claim("u", "p", ClaimRequest(f"w{i}", 5, 600, (), 1))
                total += len(result.jobs)
            except ProjectDispatchRateLimited:
                pass

    try:
        await asyncio.gather(*(worker(i, s) for i, s in enumerate(stores)))
    finally:
        for s in stores:
            await s.close()
        await admin.close()
    elapsed_s = (clock.now - clock.first) / 1e9
    assert total > 0
    assert total <= 1 + qps * elapsed_s
