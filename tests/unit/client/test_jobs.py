"""Job handles: claim_jobs, renewal batching and timing, lost detection, finishing, close."""

from __future__ import annotations

import json

import httpx
import pytest

from hq_adapters.client import (
    ClientUpgradeRequired,
    JobFinished,
    JobState,
    LeaseLost,
    NetworkError,
    ProtocolError,
    QueueClosed,
)
from tests.unit.client.fakes import FakeClock, FakeTracker, error_response, json_response


def test_claim_jobs_request_and_handles(tracker: FakeTracker, clock: FakeClock, queue):
    tracker.add_jobs(2)
    start = clock.now
    batch = queue.claim_jobs(5, lease_seconds=40)
    assert tracker.bodies("claim") == [
        {
            "worker_id": queue.worker_id,
            "max_jobs": 5,
            "lease_seconds": 40,
            "accept_types": None,
            "policy_version": 1,
        }
    ]
    assert len(batch) == 2 and batch.retry_after_ms == 1000 and batch.policy_version == 1
    job = batch.jobs[0]
    assert (job.job_id, job.value, job.type, job.external_id) == (
        1,
        "https://example.com/1",
        "seed",
        None,
    )
    assert job.spec == {"value": "https://example.com/1", "type": "seed"}
    assert job.deadline == start + 40 and job.state is JobState.HELD
    assert job.lease_expires_at == int(start) + 40
    assert queue.held_jobs() == batch.jobs


@pytest.mark.parametrize("lease", [0, 3601, 1.5, True])
def test_claim_jobs_validates_lease(tracker, queue, lease):
    with pytest.raises(ValueError):
        queue.claim_jobs(1, lease_seconds=lease)
    assert tracker.requests == []


def test_claim_jobs_refuses_invalid_claimed_jobs(tracker: FakeTracker, queue):
    bad = {
        "project_id": "proj",
        "jobs": [{"job_id": "1", "attempt_id": "a", "lease_expires_at": 5, "value": "v"}],
        "retry_after_ms": 0,
        "policy_version": 1,
    }
    tracker.then("claim", json_response(200, bad))
    with pytest.raises(ProtocolError):
        queue.claim_jobs(1)


# -- renewal ------------------------------------------------------------------------------------
def test_renewal_every_quarter_lease_batched_by_lease(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(310)
    short = queue.claim_jobs(256, lease_seconds=40).jobs + queue.claim_jobs(44, 40).jobs
    long = queue.claim_jobs(10, lease_seconds=80).jobs
    queue.renew_now()
    assert tracker.count("extend-lease") == 0  # nothing due yet
    clock.advance(10)
    queue.renew_now()
    bodies = tracker.bodies("extend-lease")
    assert [len(b["items"]) for b in bodies] == [256, 44]
    assert {b["extend_seconds"] for b in bodies} == {40}
    sent = {(i["job_id"], i["attempt_id"]) for b in bodies for i in b["items"]}
    assert sent == {(j.job_id, j.attempt_id) for j in short}
    assert all(set(i) == {"job_id", "attempt_id"} for b in bodies for i in b["items"])
    assert all(j.deadline == clock.now + 40 for j in short)
    assert all(j.lease_expires_at == int(clock.now) + 40 for j in short)
    clock.advance(10)
    queue.renew_now()
    bodies = tracker.bodies("extend-lease")[2:]
    assert sorted((b["extend_seconds"], len(b["items"])) for b in bodies) == [
        (40, 44),
        (40, 256),
        (80, 10),
    ]
    assert all(j.deadline == clock.now + 80 for j in long)


def test_renewal_keeps_a_job_alive_beyond_its_lease(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1, lease_seconds=8)
    for _ in range(12):  # 24 s, three leases
        clock.advance(2)
        queue.renew_now()
    assert job.held
    assert job.complete("success")["job_status"] == "done"
    assert job.state is JobState.FINISHED and queue.held_jobs() == []


def test_rejected_renewal_marks_job_lost(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(2)
    lost = []
    kept, stolen = queue.claim_jobs(2, lease_seconds=8, on_lost=lost.append)
    tracker.jobs[stolen.job_id].attempt_id = "at_someone_else"
    clock.advance(2)
    queue.renew_now()
    assert stolen.lost and stolen.lost_event.is_set() and lost == [stolen]
    assert kept.held and not kept.lost_event.is_set()
    with pytest.raises(LeaseLost):
        stolen.raise_if_lost()
    kept.raise_if_lost()
    before = len(tracker.requests)
    with pytest.raises(LeaseLost):
        stolen.complete("success")
    assert len(tracker.requests) == before  # refused locally
    clock.advance(2)
    queue.renew_now()
    assert [len(b["items"]) for b in tracker.bodies("extend-lease")] == [2, 1]


def test_failed_renewal_retries_next_quarter_then_deadline_loses(tracker, clock, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1, lease_seconds=8)
    tracker.then(
        "extend-lease",
        httpx.ConnectError("down"),
        error_response(500, "internal_error"),
        error_response(409, "project_not_active"),
    )
    clock.advance(2)
    queue.renew_now()  # network error: unchanged, retry 2 s later
    assert job.held and job.deadline == 1008
    clock.advance(1)
    queue.renew_now()
    assert tracker.count("extend-lease") == 1
    clock.advance(1)
    queue.renew_now()  # 500
    clock.advance(2)
    queue.renew_now()  # 409
    assert tracker.count("extend-lease") == 3 and job.held
    clock.advance(2)  # deadline reached: lost without asking the tracker
    queue.renew_now()
    assert job.lost and tracker.count("extend-lease") == 3
    assert "deadline" in str(job.error)


def test_renewal_request_deadline_is_the_earliest_job_deadline(tracker, clock, queue):
    tracker.add_jobs(1)
    queue.claim_jobs(1, lease_seconds=8)
    clock.advance(7)  # overdue renewal: one second of lease left
    queue.renew_now()
    request = next(r for r in tracker.requests if r.url.path.endswith("extend-lease"))
    assert request.extensions["timeout"]["read"] == pytest.approx(1.0)


def test_local_deadline_passes_without_renewer(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1, lease_seconds=4)
    clock.advance(4)
    with pytest.raises(LeaseLost):
        job.complete("success")
    assert tracker.count("complete") == 0 and job.lost_event.is_set()
    assert queue.held_jobs() == []


# -- finishing ----------------------------------------------------------------------------------
def test_complete_sends_one_item_with_null_receipts(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    result = job.complete({"kind": "http_error", "code": 404, "uri": None, "meta": None})
    assert tracker.bodies("complete") == [
        {
            "worker_id": queue.worker_id,
            "items": [
                {
                    "job_id": 1,
                    "attempt_id": job.attempt_id,
                    "outcome": {"kind": "http_error", "code": 404, "uri": None, "meta": None},
                    "artifact_receipts": None,
                }
            ],
        }
    ]
    assert result["status"] == "applied" and job.state is JobState.FINISHED
    with pytest.raises(JobFinished):
        job.fail("again", retryable=True)
    assert tracker.count("fail") == 0


def test_complete_with_receipts_and_fail_body(tracker: FakeTracker, queue):
    tracker.add_jobs(2)
    a, b = queue.claim_jobs(2)
    receipt = {
        "id": "r1",
        "issuer": "i",
        "object_id": "o",
        "checksum": "md5:00",
        "size_bytes": 1,
        "accepted_at": 1,
    }
    a.complete("success", receipts=[receipt])
    assert tracker.bodies("complete")[0]["items"][0]["artifact_receipts"] == [receipt]
    assert tracker.bodies("complete")[0]["items"][0]["outcome"] == {"kind": "success"}
    result = b.fail("timeout", retryable=True, message="took too long")
    assert tracker.bodies("fail")[0]["items"] == [
        {
            "job_id": b.job_id,
            "attempt_id": b.attempt_id,
            "retryable": True,
            "error": {"code": "timeout", "message": "took too long", "details": None},
        }
    ]
    assert result["job_status"] == "todo"


def test_rejected_completion_marks_lost(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    tracker.jobs[1].attempt_id = "at_other"
    with pytest.raises(LeaseLost):
        job.complete("success")
    assert job.lost and queue.held_jobs() == []


def test_failed_completion_request_keeps_job_held(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    tracker.then("complete", httpx.ReadTimeout("slow"))
    with pytest.raises(NetworkError):
        job.complete("success")
    assert job.held and queue.held_jobs() == [job]
    job.complete("success")
    assert job.state is JobState.FINISHED


def test_complete_many_splits_and_settles_handles(tracker: FakeTracker, queue):
    tracker.add_jobs(600)
    jobs = [j for _ in range(3) for j in queue.claim_jobs(200).jobs]
    tracker.jobs[jobs[300].job_id].attempt_id = "at_other"
    items = [j.complete_item("success") for j in jobs]
    results = queue.complete_many(items)
    assert [len(b["items"]) for b in tracker.bodies("complete")] == [256, 256, 88]
    assert [r["job_id"] for r in results] == [j.job_id for j in jobs]
    assert [r["status"] for r in results].count("rejected") == 1
    assert jobs[300].lost and jobs[299].state is JobState.FINISHED
    assert queue.held_jobs() == []


def test_fail_many(tracker: FakeTracker, queue):
    tracker.add_jobs(3)
    jobs = queue.claim_jobs(3).jobs
    results = queue.fail_many(
        [j.fail_item({"code": "x", "message": "", "details": None}, False) for j in jobs]
    )
    assert [r["job_status"] for r in results] == ["failed"] * 3
    assert tracker.count("fail") == 1


def test_mismatched_batch_response_is_refused(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    tracker.then("complete", json_response(200, {"results": []}))
    with pytest.raises(ProtocolError):
        job.complete("success")


def test_close_releases_jobs_and_refuses_further_use(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    queue.close()
    assert job.state is JobState.RELEASED and not job.lost
    with pytest.raises(QueueClosed):
        job.raise_if_lost()
    count = len(tracker.requests)
    with pytest.raises(QueueClosed):
        job.complete("success")
    with pytest.raises(QueueClosed):
        queue.claim_jobs(1)
    with pytest.raises(QueueClosed):
        queue.claim()
    assert len(tracker.requests) == count
    queue.close()  # idempotent


# -- the Go SDK's retry rule --------------------------------------------------------------------
def test_claim_jobs_retries_network_5xx_and_429_with_backoff(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(1)
    tracker.then("policy", httpx.ConnectError("down"), error_response(502, "internal_error"))
    tracker.then(
        "claim",
        httpx.ConnectError("down"),
        error_response(429, "project_dispatch_rate_limited", retryable=True, retry_after_ms=300),
        error_response(500, "internal_error"),
    )
    batch = queue.claim_jobs(1)
    assert len(batch) == 1
    # rng 0.5 → +5 %: backoff 1, 2 (policy), 4 (claim), hint 0.3, backoff 8
    assert clock.sleeps == pytest.approx([1.05, 2.1, 4.2, 0.315, 8.4])
    assert tracker.count("claim") == 4


def test_backoff_caps_at_one_minute(tracker: FakeTracker, clock, queue):
    tracker.then("claim", *[httpx.ConnectError("down")] * 9)
    queue.claim_jobs(1)
    assert clock.sleeps == pytest.approx([d * 1.05 for d in (1, 2, 4, 8, 16, 32, 60, 60, 60)])


@pytest.mark.parametrize(
    "status, code",
    [
        (401, "invalid_machine_token"),
        (403, "permission_denied"),
        (404, "not_found"),
        (409, "project_not_active"),
        (400, "invalid_request"),
        (426, "client_upgrade_required"),
    ],
)
def test_claim_jobs_does_not_retry_client_errors(tracker, clock, queue, status, code):
    tracker.then("claim", error_response(status, code))
    with pytest.raises(Exception) as caught:
        queue.claim_jobs(1)
    assert getattr(caught.value, "status", None) == status and clock.sleeps == []
    if status == 426:
        assert isinstance(caught.value, ClientUpgradeRequired)


def test_claimed_jobs_are_parsed_once(tracker: FakeTracker, queue):
    tracker.add_jobs(1)
    (job,) = queue.claim_jobs(1)
    assert json.loads(tracker.requests[-1].content)["max_jobs"] == 1
    assert job.ref == {"job_id": 1, "attempt_id": job.attempt_id}


def test_failing_on_lost_callback_does_not_break_renewal(tracker: FakeTracker, clock, queue):
    tracker.add_jobs(2)

    def explode(job):
        raise RuntimeError("callback bug")

    a, b = queue.claim_jobs(2, lease_seconds=8, on_lost=explode).jobs
    tracker.jobs[a.job_id].attempt_id = "at_other"
    clock.advance(2)
    queue.renew_now()
    assert a.lost and b.held and b.deadline == clock.now + 8


def test_reference_complete_settles_held_handles(tracker: FakeTracker, queue):
    tracker.add_jobs(2)
    a, b = queue.claim_jobs(2).jobs
    response = queue.complete([a.complete_item("success"), {"job_id": 99, "attempt_id": "x"}])
    assert [r["status"] for r in response["results"]] == ["applied", "rejected"]
    assert a.state is JobState.FINISHED and queue.held_jobs() == [b]
