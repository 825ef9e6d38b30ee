"""The reference ``claim``: policy cache and refresh, pacing, the 429 rule, response checks."""

from __future__ import annotations

import itertools
import math

import httpx
import pytest

from hq_adapters.client import APIError, NetworkError, ProtocolError, ServerError
from hq_adapters.client.policy import Pacer, parse_policy
from tests.unit.client.fakes import FakeClock, FakeTracker, Rng, error_response, json_response


def _policy(**overrides):
    base = {
        "project_id": "proj",
        "dispatch_qps": None,
        "worker_claim_qps": None,
        "max_jobs_per_claim": 256,
        "recommended_lease_seconds": 300,
        "policy_version": 1,
        "refresh_after_ms": 60000,
    }
    return {**base, **overrides}


def test_claim_body_uses_policy_defaults_and_clamps(tracker: FakeTracker, queue):
    tracker.max_jobs_per_claim, tracker.recommended_lease_seconds = 10, 120
    tracker.add_jobs(3)
    response = queue.claim(max_jobs=64, accept_types=["seed", "asset"])
    assert tracker.bodies("claim") == [
        {
            "worker_id": queue.worker_id,
            "max_jobs": 10,
            "lease_seconds": 120,
            "accept_types": ["seed", "asset"],
            "policy_version": 1,
        }
    ]
    assert [job["job_id"] for job in response["jobs"]] == [1, 2, 3]
    assert response["project_id"] == "proj"


def test_claim_rejects_non_positive_max_jobs(tracker, queue):
    with pytest.raises(ValueError, match="max_jobs must be positive"):
        queue.claim(max_jobs=0)
    assert tracker.requests == []


def test_policy_is_cached_until_refresh_after_ms(tracker: FakeTracker, clock: FakeClock, queue):
    tracker.refresh_after_ms = 5000
    queue.claim()
    clock.advance(4.999)
    queue.claim()
    assert tracker.count("policy") == 1
    clock.advance(0.001)
    queue.claim()
    assert tracker.count("policy") == 2


def test_claim_with_new_policy_version_forces_refresh(tracker: FakeTracker, queue):
    queue.claim()
    tracker.policy_version = 2  # the claim response carries the new version
    queue.claim()
    assert tracker.count("policy") == 1
    queue.claim()
    assert tracker.count("policy") == 2
    assert tracker.bodies("claim")[-1]["policy_version"] == 2


@pytest.mark.parametrize(
    "bad",
    [
        {"project_id": "other"},
        {"max_jobs_per_claim": 0},
        {"max_jobs_per_claim": 257},
        {"max_jobs_per_claim": True},
        {"recommended_lease_seconds": 0},
        {"recommended_lease_seconds": 3601},
        {"recommended_lease_seconds": 30.0},
        {"policy_version": 0},
        {"refresh_after_ms": 0},
        {"dispatch_qps": 0},
        {"dispatch_qps": -1.5},
        {"worker_claim_qps": True},
        {"worker_claim_qps": "1"},
    ],
)
def test_invalid_policies_are_refused(bad):
    with pytest.raises(ProtocolError, match="invalid project policy"):
        parse_policy(_policy(**bad), "proj")


def test_valid_policy_extremes():
    parsed = parse_policy(_policy(dispatch_qps=1e-300, worker_claim_qps=1e300), "proj")
    assert parsed.worker_claim_qps == 1e300
    assert parse_policy({k: v for k, v in _policy().items() if k != "dispatch_qps"}, "proj")


def test_invalid_policy_is_a_value_error_from_claim(tracker: FakeTracker, queue):
    tracker.then("policy", json_response(200, _policy(project_id="nope")))
    with pytest.raises(ValueError, match="invalid project policy"):
        queue.claim()
    assert tracker.count("claim") == 0


@pytest.mark.parametrize(
    "body",
    [
        {"project_id": "other", "jobs": []},
        {"project_id": "proj", "jobs": None},
        {"project_id": "proj"},
    ],
)
def test_mismatched_claim_response_is_refused(tracker: FakeTracker, queue, body):
    tracker.then("claim", json_response(200, body))
    with pytest.raises(ProtocolError, match="mismatched claim response"):
        queue.claim()


# -- pacing -------------------------------------------------------------------------------------
def test_pacer_arithmetic():
    pacer = Pacer()
    assert pacer.reserve(None, 10.0, 0.9) == 0.0
    # interval 0.5 s: first slot at now + u*interval
    assert pacer.reserve(2.0, 10.0, 0.4) == pytest.approx(0.2)  # scheduled 10.2, next 10.7
    # immediately again: max(now, next) + u*interval/10
    assert pacer.reserve(2.0, 10.0, 0.5) == pytest.approx(0.725)  # scheduled 10.725, next 11.225
    # late caller: now beyond next, only the jitter is waited
    assert pacer.reserve(2.0, 20.0, 0.2) == pytest.approx(0.01)
    pacer.reset()
    assert pacer.reserve(2.0, 30.0, 0.0) == 0.0  # a fresh first slot


def test_pacer_survives_tiny_qps():
    assert math.isfinite(Pacer().reserve(1e-300, 0.0, 0.5))


def test_claims_are_paced_by_worker_claim_qps(tracker: FakeTracker, clock: FakeClock, queue):
    tracker.worker_claim_qps = 4.0  # interval 0.25 s; rng always 0.5
    sent_at = []
    tracker.hook = lambda route, body: sent_at.append(clock.now) if route == "claim" else None
    start = clock.now
    for _ in range(5):
        queue.claim()
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert sent_at[0] - start == pytest.approx(0.125)
    assert gaps == pytest.approx([0.25 + 0.0125] * 4)


def test_policy_version_change_resets_pacing(tracker: FakeTracker, clock: FakeClock, queue):
    tracker.worker_claim_qps = 1.0
    queue.claim()
    queue.claim()
    assert clock.sleeps == pytest.approx([0.5, 1.05])
    tracker.policy_version = 2
    tracker.worker_claim_qps = 0.5
    clock.advance(60)  # policy refresh due; pacing restarts with a random first slot
    queue.claim()
    assert clock.sleeps[-1] == pytest.approx(1.0)  # 0.5 × interval 2 s


def test_unpaced_claims_do_not_sleep(tracker: FakeTracker, clock: FakeClock, queue):
    for _ in range(3):
        queue.claim()
    assert clock.sleeps == []


# -- the 429 rule -------------------------------------------------------------------------------
def test_429_is_retried_after_retry_after_ms_with_jitter(tracker: FakeTracker, clock, queue):
    queue._core.rng = Rng(0.3)
    tracker.then(
        "claim",
        error_response(429, "project_dispatch_rate_limited", retryable=True, retry_after_ms=400),
    )
    tracker.then(
        "claim",
        error_response(
            429, "project_dispatch_rate_limited", retryable=True, retry_after_ms=1_000_000
        ),
    )
    assert queue.claim()["jobs"] == []
    assert clock.sleeps == pytest.approx([0.4 * 1.03, 1000 * 1.03])
    assert tracker.count("claim") == 3


@pytest.mark.parametrize(
    "response",
    [
        error_response(429, "project_dispatch_rate_limited", retryable=False, retry_after_ms=400),
        error_response(429, "project_dispatch_rate_limited", retryable=True, retry_after_ms=0),
        error_response(503, "internal_error", retryable=True, retry_after_ms=400),
        error_response(409, "project_not_active"),
    ],
)
def test_other_errors_propagate_from_claim(tracker: FakeTracker, clock, queue, response):
    tracker.then("claim", response)
    with pytest.raises(APIError):
        queue.claim()
    assert clock.sleeps == [] and tracker.count("claim") == 1


def test_reference_claim_does_not_retry_network_errors(tracker: FakeTracker, queue):
    tracker.then("claim", httpx.ConnectError("down"))
    with pytest.raises(NetworkError):
        queue.claim()


def test_policy_fetch_errors_propagate_from_reference_claim(tracker: FakeTracker, queue):
    tracker.then("policy", error_response(500, "internal_error"))
    with pytest.raises(ServerError):
        queue.claim()
