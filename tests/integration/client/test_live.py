"""The SDK against a real tracker: renewal, theft, pacing, 429, 426, draining, many workers."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter

import httpx
import pytest

from hq_adapters.client import (
    ClientUpgradeRequired,
    Config,
    JobState,
    LeaseLost,
    ProjectNotActive,
    ProjectQueue,
    open_async_project_queue,
    open_project_queue,
    whoami,
)
from tests.integration.client.harness import ADMIN, Admin

pytestmark = pytest.mark.timeout(120)


class Recording(httpx.HTTPTransport):
    """A real transport that remembers (path, status, send time) of every exchange, and when
    each answer arrived (``answered``, in the same order)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int, float]] = []
        self.answered: list[float] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = time.monotonic()
        response = super().handle_request(request)
        self.seen.append((request.url.path.rsplit("/", 1)[-1], response.status_code, sent))
        self.answered.append(time.monotonic())
        return response


def test_whoami(config: Config):
    assert whoami(config) == ADMIN


def test_job_held_longer_than_its_lease_survives_through_renewal(config, admin: Admin, project):
    admin.enqueue(project, 1)
    with open_project_queue(config, project) as queue:
        # Server deadlines are whole seconds, so a 4 s lease lasts at least 3 s and renewals
        # (every quarter lease) may run late twice under CI load without losing the job.
        (job,) = queue.claim_jobs(1, lease_seconds=4)
        time.sleep(8.5)  # more than two leases
        assert job.held
        assert job.complete("success")["job_status"] == "done"
    assert admin.job(project, job.job_id)["status"] == "done"


async def test_async_job_survives_through_renewal(config, admin: Admin, project):
    admin.enqueue(project, 1)
    async with open_async_project_queue(config, project) as queue:
        (job,) = (await queue.claim_jobs(1, lease_seconds=4)).jobs
        await asyncio.sleep(8.5)  # more than two leases
        assert job.held
        assert (await job.fail("gave-up", retryable=False))["job_status"] == "failed"


def test_stolen_lease_is_reported_lost_and_completion_rejected(config, admin: Admin, project):
    admin.enqueue(project, 2)
    frozen = [0.0]  # worker A's clock stands still: it neither renews nor notices expiry
    lost = []
    with (
        ProjectQueue(config, project, clock=lambda: frozen[0], renew=False) as a,
        open_project_queue(config, project) as b,
    ):
        # Leases end on whole Unix seconds (lease_expires_at): a 1 s lease
        # taken just before a second turns is over a few ms later, and the second claim would
        # sweep and take that job again. Claim both just after a second has turned.
        time.sleep(1.02 - time.time() % 1)
        (renewed,) = a.claim_jobs(1, lease_seconds=1, on_lost=lost.append).jobs
        (completed,) = a.claim_jobs(1, lease_seconds=2).jobs
        assert completed.job_id != renewed.job_id
        time.sleep(2.2)  # both server leases expired
        stolen = b.claim_jobs(2, lease_seconds=30).jobs
        assert {j.job_id for j in stolen} == {renewed.job_id, completed.job_id}
        frozen[0] = 0.3  # the 1 s job's renewal is due (quarter lease), the 2 s job's is not
        a.renew_now()
        assert renewed.lost and lost == [renewed] and renewed.lost_event.is_set()
        with pytest.raises(LeaseLost):
            renewed.complete("success")  # refused locally, nothing sent
        with pytest.raises(LeaseLost):
            completed.complete("success")  # sent; the tracker rejects the stale attempt
        assert completed.lost
        raw = a.complete([completed.complete_item("success")])
        assert raw["results"][0]["status"] == "rejected"
        assert raw["results"][0]["error"]["code"] == "stale_attempt"
        assert [j.complete("success")["status"] for j in stolen] == ["applied", "applied"]


def test_claim_pacing_respects_worker_claim_qps(config, admin: Admin, project):
    qps = 5.0
    admin.put_project(project, client_versions=[config.client_version], worker_claim_qps=qps)
    recording = Recording()
    with open_project_queue(config, project, transport=recording) as queue:
        for _ in range(11):
            queue.claim(1)
    claims = [
        (sent, answered)
        for (path, _, sent), answered in zip(recording.seen, recording.answered, strict=True)
        if path == "claim"
    ]
    window = claims[-1][0] - claims[0][0]
    rate = (len(claims) - 1) / window
    assert rate <= qps * 1.02, rate  # what pacing promises: never faster than the project allows
    # ... and no slower than it must: each claim leaves one interval (0.2 s) plus at most 10 %
    # jitter after the one before, or as soon as that one's answer is in if it took longer. The
    # 0.1 s slack is the thread's wake-up on a loaded machine (CI once saw 0.31 s per claim there,
    # so a bound on the overall rate alone could not hold).
    for (sent, answered), (next_sent, _) in itertools.pairwise(claims):
        assert next_sent <= max(sent + 0.22, answered) + 0.1, (next_sent - sent, answered - sent)


def test_rate_limited_claim_is_retried_after_retry_after_ms(config, admin: Admin, project):
    admin.put_project(project, client_versions=[config.client_version], dispatch_qps=2.5)
    admin.enqueue(project, 3)
    recording = Recording()
    with open_project_queue(config, project, transport=recording) as queue:
        first = queue.claim(1)
        assert len(first["jobs"]) == 1 and first["retry_after_ms"] == 400
        second = queue.claim(1)
        assert len(second["jobs"]) == 1
    statuses = [(path, status) for path, status, _ in recording.seen]
    assert ("claim", 429) in statuses
    t_429 = next(t for path, status, t in recording.seen if status == 429)
    t_retry = recording.seen[-1][2]
    assert 0.25 <= t_retry - t_429 <= 0.7  # ~0.4 s × (1 + U[0, 0.1)) plus one round trip


def test_client_upgrade_required_exposes_allowed_versions(config, admin: Admin, project):
    admin.put_project(project, client_versions=["worker/2.0", "worker/2.1"])
    with open_project_queue(config, project) as queue, pytest.raises(ClientUpgradeRequired) as e:
        queue.claim_jobs(1)
    assert e.value.status == 426
    assert e.value.client_versions == ["worker/2.0", "worker/2.1"]
    assert e.value.client_version == config.client_version


def test_draining_project_refuses_claims_but_accepts_completion(config, admin: Admin, project):
    admin.enqueue(project, 1)
    with open_project_queue(config, project) as queue:
        (job,) = queue.claim_jobs(1, lease_seconds=30)
        admin.put_project(project, status="draining", client_versions=[config.client_version])
        with pytest.raises(ProjectNotActive):
            queue.claim_jobs(1)
        assert job.complete("success")["status"] == "applied"


def test_worker_threads_drain_a_project_exactly_once(config, admin: Admin, project):
    total = 400
    admin.enqueue(project, total)
    token = admin.worker_token(f"{project}-w")
    worker_config = Config(
        config.tracker_url,
        token,
        config.client_version,
        allow_http_tracker=True,
        request_timeout=10,
    )
    applied: Counter[int] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            with open_project_queue(worker_config, project) as queue:
                while True:
                    batch = queue.claim_jobs(7, lease_seconds=30)
                    if not batch.jobs:
                        return
                    if index % 2:  # half complete one by one, half in one batch
                        done = [j.job_id for j in batch if j.complete("success")]
                    else:
                        results = queue.complete_many([j.complete_item("success") for j in batch])
                        done = [r["job_id"] for r in results if r["status"] == "applied"]
                        assert all(j.state is JobState.FINISHED for j in batch)
                    with lock:
                        applied.update(done)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(applied) == total and set(applied.values()) == {1}
    assert admin.project(project)["job_counts"]["done"] == total


async def test_async_workers_drain_a_project_exactly_once(config, admin: Admin, project):
    total = 300
    admin.enqueue(project, total)
    applied: Counter[int] = Counter()

    async def work() -> None:
        async with open_async_project_queue(config, project) as queue:
            while batch := (await queue.claim_jobs(5, lease_seconds=30)).jobs:
                for job in batch:
                    result = await job.complete({"kind": "success", "code": 200})
                    applied[result["job_id"]] += 1

    await asyncio.gather(*(work() for _ in range(8)))
    assert len(applied) == total and set(applied.values()) == {1}
    assert admin.project(project)["job_counts"]["done"] == total


def test_threads_sharing_one_queue_drain_exactly_once(config, admin: Admin, project):
    total = 200
    admin.enqueue(project, total)
    applied: Counter[int] = Counter()
    lock = threading.Lock()
    with open_project_queue(config, project) as queue:

        def work() -> None:
            while batch := queue.claim_jobs(5, lease_seconds=30).jobs:
                results = queue.complete_many([j.complete_item("success") for j in batch])
                with lock:
                    applied.update(r["job_id"] for r in results if r["status"] == "applied")

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert queue.held_jobs() == []
    assert len(applied) == total and set(applied.values()) == {1}
