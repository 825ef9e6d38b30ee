"""AsyncProjectQueue: the same flows as the sync queue, driven by asyncio."""

from __future__ import annotations

import httpx
import pytest

from hq_adapters.client import (
    AsyncProjectQueue,
    ClientUpgradeRequired,
    JobState,
    LeaseLost,
    QueueClosed,
    TransportError,
    async_whoami,
)
from tests.unit.client.conftest import CONFIG
from tests.unit.client.fakes import FakeClock, FakeTracker, Rng, error_response, json_response


@pytest.fixture
async def aqueue(tracker: FakeTracker, clock: FakeClock):
    queue = AsyncProjectQueue(
        CONFIG,
        "proj",
        transport=tracker.async_transport(),
        clock=clock,
        sleep=clock.asleep,
        rng=Rng(0.5),
        renew=False,
    )
    yield queue
    await queue.close()


async def test_reference_api_bodies(tracker: FakeTracker, aqueue):
    tracker.add_jobs(2)
    response = await aqueue.claim(max_jobs=5, lease_seconds=60, accept_types=["asset"])
    assert len(response["jobs"]) == 2  # the fake ignores accept_types
    await aqueue.complete([{"job_id": 1, "attempt_id": "a"}])
    await aqueue.fail([{"job_id": 1, "attempt_id": "a"}])
    await aqueue.extend_lease(30, [{"job_id": 1, "attempt_id": "a"}])
    assert tracker.bodies("claim")[0]["accept_types"] == ["asset"]
    assert tracker.bodies("extend-lease") == [
        {
            "worker_id": aqueue.worker_id,
            "extend_seconds": 30,
            "items": [{"job_id": 1, "attempt_id": "a"}],
        }
    ]
    for request in tracker.requests:
        assert request.headers["x-savewebhq-client-version"] == "v1.2"
        assert request.headers["cache-control"] == "no-store"


async def test_pacing_and_429_use_the_async_sleep(tracker: FakeTracker, clock, aqueue):
    tracker.worker_claim_qps = 2.0
    tracker.then(
        "claim",
        error_response(429, "project_dispatch_rate_limited", retryable=True, retry_after_ms=400),
    )
    await aqueue.claim()
    # first slot 0.25; 429 → 0.42; the retry is paced again: max(now, next) + 0.025
    assert clock.sleeps == pytest.approx([0.25, 0.42, 0.105])


async def test_handles_renewal_and_loss(tracker: FakeTracker, clock, aqueue):
    tracker.add_jobs(2)
    lost = []
    keep, steal = (await aqueue.claim_jobs(2, lease_seconds=8, on_lost=lost.append)).jobs
    tracker.jobs[steal.job_id].attempt_id = "at_other"
    clock.advance(2)
    await aqueue.renew_now()
    assert steal.lost and steal.lost_event.is_set() and lost == [steal]
    for _ in range(10):
        clock.advance(2)
        await aqueue.renew_now()
    assert keep.held
    with pytest.raises(LeaseLost):
        await steal.complete("success")
    assert (await keep.fail("boom", retryable=False))["job_status"] == "failed"
    assert keep.state is JobState.FINISHED


async def test_complete_many_and_close(tracker: FakeTracker, aqueue):
    tracker.add_jobs(300)
    jobs = (await aqueue.claim_jobs(256)).jobs + (await aqueue.claim_jobs(44)).jobs
    results = await aqueue.complete_many([j.complete_item("success") for j in jobs[:290]])
    assert len(results) == 290 and tracker.count("complete") == 2
    await aqueue.close()
    assert {j.state for j in jobs[290:]} == {JobState.RELEASED}
    with pytest.raises(QueueClosed):
        await aqueue.claim_jobs(1)


async def test_claim_jobs_retry_rule(tracker: FakeTracker, clock, aqueue):
    tracker.then("claim", httpx.ConnectError("down"), error_response(503, "internal_error"))
    await aqueue.claim_jobs(1)
    assert clock.sleeps == pytest.approx([1.05, 2.1])
    tracker.then(
        "claim",
        error_response(
            426,
            "client_upgrade_required",
            details={"client_version": "v1.2", "client_versions": ["v9"]},
        ),
    )
    with pytest.raises(ClientUpgradeRequired) as caught:
        await aqueue.claim_jobs(1)
    assert caught.value.client_versions == ["v9"]


async def test_async_whoami():
    async def ok(request):
        return json_response(200, {"user_id": "bob"})

    async def cacheable(request):
        return httpx.Response(200, json={"user_id": "bob"})

    assert await async_whoami(CONFIG, transport=httpx.MockTransport(ok)) == "bob"
    with pytest.raises(TransportError):
        await async_whoami(CONFIG, transport=httpx.MockTransport(cacheable))
