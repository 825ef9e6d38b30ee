"""Lease expiry: the sweep on every validated claim (spec §2.4 step 5) and D2's background
``sweep_expired``."""

from __future__ import annotations

import pytest

from hq_domain.errors import InvalidRequest
from hq_domain.jobs import JobStatus
from hq_domain.worker import CLAIM_SWEEP_LIMIT
from tests.contract.helpers import (
    ERROR,
    claim,
    complete,
    counts,
    done_item,
    ext_jobs,
    fail,
    fail_item,
    job,
    now_s,
    put,
    worker_user,
)


async def _setup(store, n=1, project="p1", **put_kw):
    await worker_user(store)
    await put(store, project, **put_kw)
    await store.enqueue(project, ext_jobs(*[f"{project}-{i}" for i in range(n)]))


class ExpiryContract:
    async def test_expired_lease_is_reset_by_next_claim(self, store, clock):
        await _setup(store)
        [a] = (await claim(store, lease=10)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=True))
        [a] = (await claim(store, lease=10)).jobs
        clock.advance(10)
        # expired but unswept: still wip in admin views
        assert (await store.get_job("p1", a.job_id)).status is JobStatus.WIP
        swept_at = now_s(clock)
        [again] = (await claim(store, lease=10)).jobs
        assert again.job_id == a.job_id and again.attempt_id != a.attempt_id
        # the old attempt is dead for good
        assert not (await complete(store, "p1", done_item(a.job_id, a.attempt_id)))[0].applied
        j = await store.get_job("p1", a.job_id)
        assert j.reset_count == 2 and j.execution_error == ERROR.to_json()  # expiry keeps the error
        assert j.updated_at == swept_at

    @pytest.mark.parametrize("max_resets", [0, 3])
    async def test_expiry_arithmetic(self, store, clock, max_resets):
        await _setup(store, max_resets=max_resets)
        for n in range(1, max_resets + 2):
            [a] = (await claim(store, lease=5)).jobs
            clock.advance(5)
            await claim(store, types=("asset",))  # sweeps, claims nothing
            j = await store.get_job("p1", a.job_id)
            expected = JobStatus.TODO if n <= max_resets else JobStatus.RESET_EXHAUSTED
            assert (j.status, j.reset_count) == (expected, n)
            assert (j.attempt_id, j.worker_id, j.lease_expires_at) == (None, None, None)
            assert j.completed_at is None  # expiry never sets completed_at
        assert (await counts(store))["reset_exhausted"] == 1
        assert (await claim(store)).jobs == []

    async def test_claim_sweep_only_touches_its_project(self, store, clock):
        await _setup(store, project="p1")
        await _setup(store, project="p2")
        await claim(store, "p1", lease=5)
        await claim(store, "p2", lease=5)
        clock.advance(6)
        await claim(store, "p1", types=("asset",))
        assert (await counts(store, "p1"))["todo"] == 1
        assert (await counts(store, "p2"))["wip"] == 1

    async def test_live_leases_survive_the_sweep(self, store, clock):
        await _setup(store, n=2)
        [a] = (await claim(store, lease=5, max_jobs=1)).jobs
        [b] = (await claim(store, lease=50, max_jobs=1)).jobs
        clock.advance(5)
        await claim(store, types=("asset",))
        assert (await store.get_job("p1", a.job_id)).status is JobStatus.TODO
        assert (await store.get_job("p1", b.job_id)).status is JobStatus.WIP

    async def test_sweep_expired_any_project(self, store, clock):
        await _setup(store, n=3, project="p1")
        await _setup(store, n=2, project="p2", max_resets=0)
        await claim(store, "p1", lease=5)
        await claim(store, "p2", lease=50)
        assert await store.sweep_expired(100) == 0
        clock.advance(5)
        assert await store.sweep_expired(2) == 2
        assert (await counts(store, "p1"))["todo"] == 2
        assert await store.sweep_expired(100) == 1
        assert (await counts(store, "p1"))["todo"] == 3
        assert (await counts(store, "p2"))["wip"] == 2
        clock.advance(50)
        assert await store.sweep_expired(100) == 2
        c = await counts(store, "p2")
        assert c["reset_exhausted"] == 2 and c["wip"] == 0
        for j in (await store.list_jobs("p2", None, 0, 10)).jobs:
            assert j.reset_count == 1 and j.completed_at is None and j.updated_at == now_s(clock)
            assert j.worker_id is None and j.last_worker_id == "w1"  # whose lease ran out
        assert await store.sweep_expired(100) == 0

    async def test_sweep_expired_lets_a_project_be_deleted(self, store, clock):
        await _setup(store)
        await claim(store, lease=5)
        clock.advance(10)
        with pytest.raises(InvalidRequest, match=r"^project has WIP jobs$"):
            await store.delete_project("p1")
        assert await store.sweep_expired(10) == 1
        await store.delete_project("p1")
        assert await store.get_project("p1") is None

    async def test_sweep_expired_reaches_non_active_projects(self, store, clock):
        await _setup(store)
        await claim(store, lease=5)
        await put(store, status="archived")
        clock.advance(5)
        assert await store.sweep_expired(10) == 1
        assert (await counts(store))["todo"] == 1

    async def test_swept_job_keeps_queue_position(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", [job("old", id="old")])
        await claim(store, lease=5)
        clock.advance(1)
        await store.enqueue("p1", [job("new", id="new")])
        clock.advance(5)
        got = (await claim(store, max_jobs=1)).jobs
        assert got[0].external_id == "old"

    async def test_a_claim_resets_a_bounded_number_of_expired_leases(self, store, clock):
        """D2: one claim sweeps at most CLAIM_SWEEP_LIMIT expired rows; the rest wait for the
        next claim or the background sweep."""
        extra = 10
        n = CLAIM_SWEEP_LIMIT + extra
        await _setup(store, n=n)
        held = 0
        while held < n:
            held += len((await claim(store, max_jobs=256, lease=5)).jobs)
        clock.advance(5)
        [_] = (await claim(store, max_jobs=1, lease=60)).jobs
        assert await counts(store) == {
            "todo": CLAIM_SWEEP_LIMIT - 1, "wip": extra + 1, "done": 0, "failed": 0,
            "reset_exhausted": 0,
        }  # fmt: skip
        assert await store.sweep_expired(1000) == extra
