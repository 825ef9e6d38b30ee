"""The transition table of a job (spec §2.1–2.3): enqueue, claim, complete, fail, extend,
expire, requeue and delete.

Each transition is a pure function giving the fields it writes as a :class:`Changes`; every
field it leaves out keeps its stored value. The memory adapter applies these (``MemoryState
.apply``); each SQL statement writes the same fields (``tests/integration/
test_lifecycle_agreement.py`` compares rows), and a rule SQL must evaluate inside a statement
is one ``tracker_rule_*`` function of migration 0008 (``test_rule_agreement.py``).

A *reset* is a retryable failure or a lease expiry: ``reset_count += 1`` and the job becomes
``reset_exhausted`` when the new count exceeds ``max_resets``, else ``todo``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Final

from hq_domain.jobs import TERMINAL_REQUEUEABLE, JobStatus


class _Keep:
    __slots__ = ()

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = _Keep()  # a field the transition leaves as stored


@dataclass(frozen=True, slots=True)
class Changes:
    """The fields of a job row a transition writes (``KEEP`` = left as stored)."""

    status: JobStatus | _Keep = KEEP
    reset_count: int | _Keep = KEEP
    attempt_id: str | _Keep | None = KEEP
    worker_id: str | _Keep | None = KEEP
    last_worker_id: str | _Keep | None = KEEP
    lease_expires_at: int | _Keep | None = KEEP
    outcome: dict[str, Any] | _Keep | None = KEEP
    artifact_receipts: list[dict[str, Any]] | _Keep | None = KEEP
    execution_error: dict[str, Any] | _Keep | None = KEEP
    completed_at: int | _Keep | None = KEEP
    updated_at: int | _Keep = KEEP

    def written(self) -> dict[str, Any]:
        """The written fields by name, in declaration order."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not KEEP:
                out[f.name] = value
        return out


def _end_attempt(worker_id: str | None, now_s: int) -> dict[str, Any]:
    """What every end of an attempt writes: no attempt, lease or worker, and whose it was."""
    return {
        "attempt_id": None, "worker_id": None, "last_worker_id": worker_id,
        "lease_expires_at": None, "updated_at": now_s,
    }


def after_reset(reset_count: int, max_resets: int) -> tuple[JobStatus, int]:
    """Status and count after a reset. SQL: ``tracker_rule_reset_status``."""
    count = reset_count + 1
    return (JobStatus.RESET_EXHAUSTED if count > max_resets else JobStatus.TODO), count


def fail_status(retryable: bool, reset_count: int, max_resets: int) -> JobStatus:
    """Where an applied failure sends a job: ``failed``, or a reset. SQL:
    ``tracker_rule_fail_status``."""
    return after_reset(reset_count, max_resets)[0] if retryable else JobStatus.FAILED


def enqueue(now_s: int) -> Changes:
    """A new row: todo, no attempt, nothing recorded (``artifact_receipts`` never set)."""
    return Changes(
        status=JobStatus.TODO, reset_count=0, attempt_id=None, worker_id=None,
        last_worker_id=None, lease_expires_at=None, outcome=None, artifact_receipts=[],
        execution_error=None, completed_at=None, updated_at=now_s,
    )


def claimable(status: JobStatus) -> bool:
    return status is JobStatus.TODO


def claim(attempt_id: str, worker_id: str, lease_expires_at: int, now_s: int) -> Changes:
    """A todo row handed to a worker (spec §2.4 step 8)."""
    return Changes(
        status=JobStatus.WIP, attempt_id=attempt_id, worker_id=worker_id,
        lease_expires_at=lease_expires_at, updated_at=now_s,
    )


def lease_live(lease_expires_at: int | None, now_s: int) -> bool:
    """A lease is live while its deadline is strictly in the future (whole seconds)."""
    return lease_expires_at is not None and lease_expires_at > now_s


def holds(
    status: JobStatus, attempt_id: str | None, worker_id: str | None,
    lease_expires_at: int | None, item_attempt_id: str, item_worker_id: str, now_s: int,
) -> bool:
    """Whether a complete/fail/extend item matches the row's attempt: wip, same attempt and
    worker, live lease. Anything else is a stale attempt (spec §1.7.12)."""
    return (
        status is JobStatus.WIP
        and attempt_id == item_attempt_id
        and worker_id == item_worker_id
        and lease_live(lease_expires_at, now_s)
    )


def first_items(pairs: Iterable[tuple[int, str]]) -> list[bool]:
    """Which items of a batch may apply: the first occurrence of each (job_id, attempt_id)
    pair; a repeat is rejected. SQL: ``tracker_rule_first_items`` (the positions of the
    ``True`` entries, from 1)."""
    seen: set[tuple[int, str]] = set()
    out = []
    for pair in pairs:
        out.append(pair not in seen)
        seen.add(pair)
    return out


def complete(
    worker_id: str | None, outcome: dict[str, Any], receipts: list[dict[str, Any]] | None,
    now_s: int,
) -> Changes:
    """An applied completion: done, the outcome and receipts as sent, no error."""
    return Changes(
        status=JobStatus.DONE, outcome=outcome, artifact_receipts=receipts, execution_error=None,
        completed_at=now_s, **_end_attempt(worker_id, now_s),
    )


def fail(
    retryable: bool, reset_count: int, max_resets: int, worker_id: str | None,
    error: dict[str, Any], now_s: int,
) -> Changes:
    """An applied failure. Non-retryable → failed; retryable → a reset. ``completed_at`` is
    now unless the job goes back to todo (then null)."""
    status = fail_status(retryable, reset_count, max_resets)
    return Changes(
        status=status, reset_count=reset_count + 1 if retryable else reset_count,
        execution_error=error, completed_at=None if status is JobStatus.TODO else now_s,
        **_end_attempt(worker_id, now_s),
    )


def extend(lease_expires_at: int | None, extend_seconds: int, now_s: int) -> Changes:
    """An applied extension: the deadline only grows, to ``now + extend_seconds`` at least."""
    return Changes(
        lease_expires_at=max(lease_expires_at or 0, now_s + extend_seconds), updated_at=now_s
    )


def expire(reset_count: int, max_resets: int, worker_id: str | None, now_s: int) -> Changes:
    """A lease expiry: a reset that leaves ``completed_at`` and ``execution_error`` as stored."""
    status, count = after_reset(reset_count, max_resets)
    return Changes(status=status, reset_count=count, **_end_attempt(worker_id, now_s))


def requeueable(status: JobStatus) -> bool:
    return status in TERMINAL_REQUEUEABLE


def requeue(now_s: int) -> Changes:
    """failed/reset_exhausted → todo with a clean slate (resets, outcome, receipts, error)."""
    return Changes(
        status=JobStatus.TODO, reset_count=0, outcome=None, artifact_receipts=[],
        execution_error=None, completed_at=None, updated_at=now_s,
    )


def deletable(status: JobStatus) -> bool:
    """Any row but a WIP one may be deleted (a live attempt would lose its row)."""
    return status is not JobStatus.WIP
