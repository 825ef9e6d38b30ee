"""The attempt state machine (spec §2.1–2.3): resets, failures, completions, expiry.

A *reset* is a retryable failure or a lease expiry: ``reset_count += 1`` and the job becomes
``reset_exhausted`` when the new count exceeds ``max_resets``, else ``todo``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hq_domain.jobs import JobStatus


@dataclass(frozen=True, slots=True)
class Transition:
    """Where a job goes: new status, reset count, and ``completed_at`` (``KEEP`` = unchanged)."""

    status: JobStatus
    reset_count: int
    completed_at: int | object | None


KEEP = object()  # sentinel: leave completed_at as stored


def after_reset(reset_count: int, max_resets: int) -> tuple[JobStatus, int]:
    count = reset_count + 1
    return (JobStatus.RESET_EXHAUSTED if count > max_resets else JobStatus.TODO), count


def on_fail(retryable: bool, reset_count: int, max_resets: int, now_s: int) -> Transition:
    """An applied failure. Non-retryable → failed; retryable → a reset.

    ``completed_at`` is now for failed and reset_exhausted, null when the job returns to todo.
    """
    if not retryable:
        return Transition(JobStatus.FAILED, reset_count, now_s)
    status, count = after_reset(reset_count, max_resets)
    return Transition(status, count, now_s if status is JobStatus.RESET_EXHAUSTED else None)


def on_expiry(reset_count: int, max_resets: int) -> Transition:
    """A lease expiry: a reset that leaves ``completed_at`` and ``execution_error`` untouched."""
    status, count = after_reset(reset_count, max_resets)
    return Transition(status, count, KEEP)


def lease_live(lease_expires_at: int | None, now_s: int) -> bool:
    """A lease is live while its deadline is strictly in the future (whole seconds)."""
    return lease_expires_at is not None and lease_expires_at > now_s
