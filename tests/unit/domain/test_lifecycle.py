"""The attempt state machine: max_resets arithmetic and completed_at rules (spec §2.2–2.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain import lifecycle
from hq_domain.jobs import JobStatus
from hq_domain.lifecycle import KEEP, after_reset, expire, fail, first_items, lease_live

NOW = 1_700_000_123


def _fail(retryable: bool, count: int, max_resets: int, now: int = NOW) -> tuple[object, ...]:
    c = fail(retryable, count, max_resets, "w", {"code": "e"}, now)
    return c.status, c.reset_count, c.completed_at


def _expire(count: int, max_resets: int) -> tuple[object, ...]:
    c = expire(count, max_resets, "w", NOW)
    return c.status, c.reset_count, c.completed_at


def test_default_three_resets_then_exhausted() -> None:
    count, seen = 0, []
    for _ in range(4):
        status, count = after_reset(count, 3)
        seen.append((status, count))
    assert seen == [
        (JobStatus.TODO, 1),
        (JobStatus.TODO, 2),
        (JobStatus.TODO, 3),
        (JobStatus.RESET_EXHAUSTED, 4),
    ]


def test_zero_max_resets_first_reset_exhausts() -> None:
    assert after_reset(0, 0) == (JobStatus.RESET_EXHAUSTED, 1)
    assert _fail(True, 0, 0) == (JobStatus.RESET_EXHAUSTED, 1, NOW)
    assert _expire(0, 0) == (JobStatus.RESET_EXHAUSTED, 1, KEEP)


def test_non_retryable_fail() -> None:
    assert _fail(False, 2, 3) == (JobStatus.FAILED, 2, NOW)
    assert _fail(False, 0, 0) == (JobStatus.FAILED, 0, NOW)


def test_retryable_fail_under_limit_clears_completed_at() -> None:
    assert _fail(True, 0, 3) == (JobStatus.TODO, 1, None)


def test_retryable_fail_over_limit_sets_completed_at() -> None:
    assert _fail(True, 3, 3) == (JobStatus.RESET_EXHAUSTED, 4, NOW)


def test_expiry_keeps_completed_at_and_error() -> None:
    assert _expire(0, 3) == (JobStatus.TODO, 1, KEEP)
    assert _expire(3, 3) == (JobStatus.RESET_EXHAUSTED, 4, KEEP)
    assert expire(0, 3, "w", NOW).execution_error is KEEP


def test_lowered_limit_applies_at_next_reset() -> None:
    # A job with 2 resets under max_resets=3, then the project lowers it to 1.
    assert after_reset(2, 1) == (JobStatus.RESET_EXHAUSTED, 3)


def test_every_end_of_an_attempt_clears_it_and_remembers_the_worker() -> None:
    ends = [
        lifecycle.complete("w", {"kind": "ok"}, None, NOW),
        fail(True, 0, 3, "w", {"code": "e"}, NOW),
        fail(False, 0, 3, "w", {"code": "e"}, NOW),
        expire(0, 3, "w", NOW),
    ]
    for c in ends:
        assert (c.attempt_id, c.worker_id, c.lease_expires_at) == (None, None, None)
        assert (c.last_worker_id, c.updated_at) == ("w", NOW)


def test_complete_writes_the_outcome_and_clears_the_error() -> None:
    c = lifecycle.complete("w", {"kind": "ok"}, [], NOW)
    assert (c.status, c.outcome, c.artifact_receipts, c.execution_error, c.completed_at) == (
        JobStatus.DONE, {"kind": "ok"}, [], None, NOW,
    )
    assert c.reset_count is KEEP


def test_claim_and_extend() -> None:
    c = lifecycle.claim("at", "w", NOW + 60, NOW)
    assert c.written() == {
        "status": JobStatus.WIP, "attempt_id": "at", "worker_id": "w",
        "lease_expires_at": NOW + 60, "updated_at": NOW,
    }
    assert lifecycle.extend(NOW + 600, 60, NOW).written() == {
        "lease_expires_at": NOW + 600, "updated_at": NOW,  # the deadline only grows
    }
    assert lifecycle.extend(NOW + 10, 60, NOW).lease_expires_at == NOW + 60


def test_enqueue_and_requeue_give_a_clean_slate() -> None:
    clean = {
        "status": JobStatus.TODO, "reset_count": 0, "outcome": None, "artifact_receipts": [],
        "execution_error": None, "completed_at": None, "updated_at": NOW,
    }
    assert lifecycle.requeue(NOW).written() == clean
    assert lifecycle.enqueue(NOW).written() == {
        **clean, "attempt_id": None, "worker_id": None, "last_worker_id": None,
        "lease_expires_at": None,
    }


@pytest.mark.parametrize("status", list(JobStatus))
def test_preconditions(status: JobStatus) -> None:
    assert lifecycle.claimable(status) is (status is JobStatus.TODO)
    assert lifecycle.requeueable(status) is (
        status in (JobStatus.FAILED, JobStatus.RESET_EXHAUSTED)
    )
    assert lifecycle.deletable(status) is (status is not JobStatus.WIP)


def test_holds_needs_the_attempt_the_worker_and_a_live_lease() -> None:
    args = (JobStatus.WIP, "at", "w", NOW + 1, "at", "w", NOW)
    assert lifecycle.holds(*args)
    for i, other in ((0, JobStatus.DONE), (1, "at2"), (2, "w2"), (3, NOW), (3, None)):
        changed = list(args)
        changed[i] = other
        assert not lifecycle.holds(*changed), (i, other)


def test_first_items_rejects_repeats_of_a_pair() -> None:
    assert first_items([(1, "a"), (1, "b"), (1, "a"), (2, "a"), (1, "b")]) == [
        True, True, False, True, False,
    ]
    assert first_items([]) == []


@pytest.mark.parametrize(
    ("deadline", "now", "live"),
    [(None, NOW, False), (NOW + 1, NOW, True), (NOW, NOW, False), (NOW - 1, NOW, False)],
)
def test_lease_live_is_strictly_future(deadline: int | None, now: int, live: bool) -> None:
    assert lease_live(deadline, now) is live


# --- properties -------------------------------------------------------------------------------

events = st.lists(st.sampled_from(["retry", "expire", "fatal"]), max_size=30)


@given(
    st.integers(min_value=0, max_value=1000),
    st.one_of(st.integers(min_value=-3, max_value=3), st.integers(min_value=-1000, max_value=1000)),
)
def test_exhausted_iff_count_exceeds_limit(reset_count: int, delta: int) -> None:
    max_resets = max(0, reset_count + delta)  # often near the boundary
    status, count = after_reset(reset_count, max_resets)
    assert count == reset_count + 1
    assert (status is JobStatus.RESET_EXHAUSTED) is (count > max_resets)
    assert status in (JobStatus.TODO, JobStatus.RESET_EXHAUSTED)


@given(st.integers(min_value=0, max_value=20), events)
def test_reset_count_never_exceeds_limit_plus_one(max_resets: int, seq: list[str]) -> None:
    """Drive a job through resets until it reaches a terminal state; it can be attempted at
    most max_resets + 1 times and its count never passes max_resets + 1."""
    status, count, attempts, completed_at = JobStatus.TODO, 0, 0, None
    for event in seq:
        if status is not JobStatus.TODO:
            break
        attempts += 1  # claimed
        if event == "expire":
            t = expire(count, max_resets, "w", NOW + attempts)
        else:
            t = fail(event == "retry", count, max_resets, "w", {"code": "e"}, NOW + attempts)
        if t.completed_at is not KEEP:
            completed_at = t.completed_at
        assert isinstance(t.status, JobStatus) and isinstance(t.reset_count, int)
        status, count = t.status, t.reset_count
        assert count <= max_resets + 1
        assert (status is JobStatus.RESET_EXHAUSTED) is (count > max_resets)
        if status is JobStatus.TODO:
            assert completed_at is None
        if event != "expire" and status is not JobStatus.TODO:
            assert completed_at == NOW + attempts
    assert attempts <= max_resets + 1


@given(st.integers(min_value=0, max_value=50))
def test_exactly_max_resets_plus_one_attempts_when_always_retrying(max_resets: int) -> None:
    count, attempts, status = 0, 0, JobStatus.TODO
    while status is JobStatus.TODO:
        attempts += 1
        status, count = after_reset(count, max_resets)
    assert attempts == max_resets + 1 and count == max_resets + 1
