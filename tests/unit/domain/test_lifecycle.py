"""The attempt state machine: max_resets arithmetic and completed_at rules (spec §2.2–2.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.jobs import JobStatus
from hq_domain.lifecycle import KEEP, Transition, after_reset, lease_live, on_expiry, on_fail

NOW = 1_700_000_123


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
    assert on_fail(True, 0, 0, NOW) == Transition(JobStatus.RESET_EXHAUSTED, 1, NOW)
    assert on_expiry(0, 0) == Transition(JobStatus.RESET_EXHAUSTED, 1, KEEP)


def test_non_retryable_fail() -> None:
    assert on_fail(False, 2, 3, NOW) == Transition(JobStatus.FAILED, 2, NOW)
    assert on_fail(False, 0, 0, NOW) == Transition(JobStatus.FAILED, 0, NOW)


def test_retryable_fail_under_limit_clears_completed_at() -> None:
    assert on_fail(True, 0, 3, NOW) == Transition(JobStatus.TODO, 1, None)


def test_retryable_fail_over_limit_sets_completed_at() -> None:
    assert on_fail(True, 3, 3, NOW) == Transition(JobStatus.RESET_EXHAUSTED, 4, NOW)


def test_expiry_keeps_completed_at() -> None:
    assert on_expiry(0, 3) == Transition(JobStatus.TODO, 1, KEEP)
    assert on_expiry(3, 3) == Transition(JobStatus.RESET_EXHAUSTED, 4, KEEP)


def test_lowered_limit_applies_at_next_reset() -> None:
    # A job with 2 resets under max_resets=3, then the project lowers it to 1.
    assert after_reset(2, 1) == (JobStatus.RESET_EXHAUSTED, 3)


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
            t = on_expiry(count, max_resets)
        else:
            t = on_fail(event == "retry", count, max_resets, NOW + attempts)
        if t.completed_at is not KEEP:
            completed_at = t.completed_at
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
