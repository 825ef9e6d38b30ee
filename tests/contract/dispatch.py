"""The dispatch token bucket on claim (spec §2.4 steps 4/6/9, §2.5, D8) and the worker
claim-bucket audit rows (spec §2.9).

Audit rows are not part of the Store protocol; tests that read them use the optional
``claim_buckets`` fixture (an async ``project_id -> [(worker_id, bucket_started_at_ms,
claim_requests, jobs_dispatched, policy_version)]``) and skip when an adapter lacks it.
"""

from __future__ import annotations

import asyncio

import pytest

from hq_domain.clock import millis
from hq_domain.errors import ProjectDispatchRateLimited
from hq_domain.jobs import JobStatus
from tests.contract.helpers import claim, counts, ext_jobs, job, now_s, put, worker_user


async def _setup(store, n=3, **put_kw):
    await worker_user(store)
    await put(store, **put_kw)
    if n:
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(n)]))


class DispatchContract:
    async def test_qps_2_5_example(self, store, clock):
        await _setup(store, dispatch_qps=2.5)
        first = await claim(store, max_jobs=10)
        assert len(first.jobs) == 1 and first.retry_after_ms == 400
        clock.advance(0.1)
        with pytest.raises(ProjectDispatchRateLimited) as exc:
            await claim(store, max_jobs=10)
        err = exc.value
        assert err.retry_after_ms == 300 and err.retryable and err.status == 429
        assert err.details == {"project_id": "p1", "policy_version": 1}
        assert err.message == "project dispatch rate limit exceeded"
        clock.advance(0.3)  # a whole token again
        assert len((await claim(store, max_jobs=10)).jobs) == 1

    async def test_qps_2000_capacity_200(self, store, clock):
        await _setup(store, n=0, dispatch_qps=2000)
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(260)]))
        result = await claim(store, max_jobs=256)
        assert len(result.jobs) == 200
        assert result.retry_after_ms == 1  # 0 tokens left: ceil(1000 / 2000) → at least 1

    async def test_huge_qps_caps_at_one_batch(self, store, clock):
        await _setup(store, n=0, dispatch_qps=1e300)
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(300)]))
        result = await claim(store, max_jobs=256)
        assert len(result.jobs) == 256 and result.retry_after_ms == 1
        clock.advance(ns=1)  # 1 ns refills the whole bucket
        assert len((await claim(store, max_jobs=256)).jobs) == 44

    async def test_tiny_qps(self, store, clock):
        await _setup(store, dispatch_qps=0.001)
        first = await claim(store)
        assert len(first.jobs) == 1 and first.retry_after_ms == 1_000_000
        clock.advance(0.1)
        with pytest.raises(ProjectDispatchRateLimited) as exc:
            await claim(store)
        assert 999_900 - 1 <= exc.value.retry_after_ms <= 999_900 + 1

    async def test_leftover_tokens_give_zero_retry(self, store, clock):
        await _setup(store, n=10, dispatch_qps=5000)  # capacity min(500, 256)
        result = await claim(store, max_jobs=3)
        assert len(result.jobs) == 3 and result.retry_after_ms == 0

    async def test_empty_queue_is_never_429(self, store, clock):
        await _setup(store, n=1, dispatch_qps=0.001)
        await store.enqueue("p1", [job("asset", id="asset", type="asset")])
        await claim(store, types=("seed",))
        # no whole token, but no matching todo work → 200 with nothing
        result = await claim(store, types=("seed",))
        assert result.jobs == [] and result.retry_after_ms == 1000
        with pytest.raises(ProjectDispatchRateLimited):
            await claim(store, types=("asset",))

    async def test_found_nothing_with_tokens_keeps_bucket(self, store, clock):
        await _setup(store, n=0, dispatch_qps=0.001)
        result = await claim(store)
        assert result.jobs == [] and result.retry_after_ms == 1000
        await store.enqueue("p1", ext_jobs("a"))
        assert len((await claim(store)).jobs) == 1  # the token was not spent

    async def test_rate_limited_claim_still_sweeps(self, store, clock):
        await _setup(store, n=2, dispatch_qps=0.5)
        [a] = (await claim(store, lease=1)).jobs
        clock.advance(1)
        with pytest.raises(ProjectDispatchRateLimited):
            await claim(store)
        assert (await store.get_job("p1", a.job_id)).status is JobStatus.TODO
        assert (await counts(store))["todo"] == 2

    async def test_bucket_reset_on_qps_change_only(self, store, clock):
        await _setup(store, dispatch_qps=0.001)
        await claim(store)
        await put(store, dispatch_qps=0.001, max_resets=5)  # policy change, same qps
        with pytest.raises(ProjectDispatchRateLimited) as exc:
            await claim(store)
        assert exc.value.details["policy_version"] == 2
        summary = await put(store, dispatch_qps=0.002)
        assert summary.project.dispatch_tokens is None
        assert summary.project.dispatch_refilled_at_ns is None
        assert len((await claim(store)).jobs) == 1

    async def test_unset_then_set_qps_starts_full(self, store, clock):
        await _setup(store)
        assert len((await claim(store, max_jobs=2)).jobs) == 2
        await put(store, dispatch_qps=0.001)
        assert len((await claim(store, max_jobs=2)).jobs) == 1
        await put(store)  # back to unlimited: never 429
        result = await claim(store)
        assert result.retry_after_ms == 1000

    async def test_refill_time_never_moves_backwards(self, store, clock):
        await _setup(store, dispatch_qps=2.5)
        start = clock.now_ns()
        await claim(store)  # tokens 0 at start
        clock.set_ns(start - 1_000_000_000)  # a claim that read an older time
        with pytest.raises(ProjectDispatchRateLimited):
            await claim(store)
        clock.set_ns(start + 200_000_000)
        with pytest.raises(ProjectDispatchRateLimited) as exc:
            await claim(store)
        assert exc.value.retry_after_ms == 200

    async def test_concurrent_claims_share_one_bucket(self, store, clock):
        await _setup(store, n=0, dispatch_qps=2000)  # capacity 200, no refill: clock stands
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(600)]))
        outcomes = await asyncio.gather(
            *(claim(store, max_jobs=256, worker=f"w{i}") for i in range(4)), return_exceptions=True
        )
        taken = [len(o.jobs) for o in outcomes if not isinstance(o, BaseException)]
        limited = [o for o in outcomes if isinstance(o, BaseException)]
        assert sum(taken) == 200
        assert all(isinstance(e, ProjectDispatchRateLimited) for e in limited)

    async def test_unlimited_project_never_limited(self, store, clock):
        await _setup(store, n=600)
        for _ in range(2):
            result = await claim(store, max_jobs=256)
            assert len(result.jobs) == 256 and result.retry_after_ms == 1000


class ClaimAuditContract:
    @pytest.fixture
    def claim_buckets(self):
        pytest.skip("this adapter offers no claim-bucket inspection hook")

    async def test_no_rows_without_worker_claim_qps(self, store, clock, claim_buckets):
        await _setup(store)
        await claim(store)
        assert await claim_buckets("p1") == []

    async def test_every_validated_claim_is_recorded(self, store, clock, claim_buckets):
        clock.set_ns(1_700_000_020 * 10**9)  # 40 s into a minute
        await _setup(store, n=2, worker_claim_qps=1.0, dispatch_qps=0.001)
        bucket = millis(clock.now_ns()) - millis(clock.now_ns()) % 60_000
        await claim(store, policy_version=5)  # 1 job
        with pytest.raises(ProjectDispatchRateLimited):
            await claim(store, policy_version=6)  # 429, 0 jobs
        await claim(store, worker="w9", types=("asset",), policy_version=1)
        assert await claim_buckets("p1") == [("w1", bucket, 2, 1, 6), ("w9", bucket, 1, 0, 1)]
        clock.advance(20)  # next minute
        await put(store, worker_claim_qps=1.0)  # unlimited dispatch now
        await claim(store, policy_version=3)
        assert await claim_buckets("p1") == [
            ("w1", bucket, 2, 1, 6), ("w1", bucket + 60_000, 1, 1, 3), ("w9", bucket, 1, 0, 1),
        ]
        assert now_s(clock) % 60 == 0

    async def test_rows_deleted_with_project(self, store, clock, claim_buckets):
        await _setup(store, n=0, worker_claim_qps=2.0)
        await claim(store)
        assert len(await claim_buckets("p1")) == 1
        await store.delete_project("p1")
        await put(store, worker_claim_qps=2.0)
        assert await claim_buckets("p1") == []
