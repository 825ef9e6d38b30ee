"""Job handles (spec §6.2): the lease state of one claimed attempt, shared by sync and async.

A handle is ``held`` until it ends exactly once: ``finished`` (complete/fail applied),
``lost`` (renewal or mutation rejected, or the local deadline passed) or ``released``
(queue closed). Only a held job is renewed or may be completed.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from hq_adapters.client.errors import JobError, JobFinished, LeaseLost, QueueClosed

log = logging.getLogger("hq_adapters.client")
_ATTEMPT_KEYS = ("job_id", "attempt_id", "lease_expires_at")
J = TypeVar("J", bound="JobBase")
# Guards every handle's one-way state transition; held only for a few assignments.
_STATE_LOCK = threading.Lock()


class JobState(enum.Enum):
    HELD = "held"
    FINISHED = "finished"
    LOST = "lost"
    RELEASED = "released"


def outcome_body(outcome: Mapping[str, Any] | str) -> dict[str, Any]:
    """An Outcome object; a bare string is the ``kind`` (``success``, ``http_error``, ``skipped``)."""
    return {"kind": outcome} if isinstance(outcome, str) else dict(outcome)


def error_body(
    error: Mapping[str, Any] | str, message: str = "", details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """An ExecutionError object; a bare string is the error ``code``."""
    if isinstance(error, str):
        return {
            "code": error,
            "message": message,
            "details": None if details is None else dict(details),
        }
    return dict(error)


class JobBase:
    """Claimed attempt + local lease bookkeeping (monotonic seconds from the queue's clock)."""

    def __init__(
        self,
        claimed: dict[str, Any],
        lease_seconds: int,
        claim_started: float,
        on_lost: Callable[[Any], None] | None,
    ) -> None:
        self.job_id: int = claimed["job_id"]
        self.attempt_id: str = claimed["attempt_id"]
        self.lease_expires_at: int = claimed["lease_expires_at"]
        self.spec: dict[str, Any] = {k: v for k, v in claimed.items() if k not in _ATTEMPT_KEYS}
        self.lease_seconds = lease_seconds
        self.deadline = claim_started + lease_seconds
        self.renew_at = claim_started + lease_seconds / 4
        self.renewing = False
        self.state = JobState.HELD
        self.error: JobError | None = None
        self._on_lost = on_lost
        self._lost_event: Any = None

    # -- the claimed job ---------------------------------------------------------------------
    @property
    def value(self) -> str:
        return self.spec["value"]

    @property
    def type(self) -> str:
        return self.spec.get("type", "seed")

    @property
    def external_id(self) -> str | None:
        return self.spec.get("id")

    @property
    def ref(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "attempt_id": self.attempt_id}

    @property
    def lost(self) -> bool:
        return self.state is JobState.LOST

    @property
    def held(self) -> bool:
        return self.state is JobState.HELD

    def complete_item(
        self, outcome: Mapping[str, Any] | str, receipts: list[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """This attempt as a ``complete`` item (for ``complete_many``)."""
        return {
            **self.ref,
            "outcome": outcome_body(outcome),
            "artifact_receipts": None if receipts is None else [dict(r) for r in receipts],
        }

    def fail_item(
        self,
        error: Mapping[str, Any] | str,
        retryable: bool,
        message: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """This attempt as a ``fail`` item (for ``fail_many``)."""
        return {**self.ref, "retryable": retryable, "error": error_body(error, message, details)}

    # -- state ---------------------------------------------------------------------------------
    def raise_if_lost(self) -> None:
        """Raise ``LeaseLost`` if lost (``QueueClosed`` if released): stop working on it."""
        if self.state is JobState.LOST or self.state is JobState.RELEASED:
            assert self.error is not None
            raise self.error

    def raise_unless_held(self) -> None:
        """Raise the reason this handle may not send a mutation (``LeaseLost``, …)."""
        if self.state is not JobState.HELD:
            assert self.error is not None
            raise self.error

    def mark_finished(self) -> bool:
        return self._end(JobState.FINISHED, JobFinished(self))

    def mark_released(self) -> bool:
        return self._end(JobState.RELEASED, QueueClosed(self))

    def mark_lost(self, why: str = "lease lost") -> bool:
        if not self._end(JobState.LOST, LeaseLost(self, f"lease lost: {why}")):
            return False
        self._signal_lost()
        if self._on_lost is not None:
            try:
                self._on_lost(self)
            except Exception:  # a faulty callback must not stop the renewal of other jobs
                log.exception("on_lost callback failed for job %s", self.job_id)
        return True

    def _end(self, state: JobState, error: JobError) -> bool:
        with _STATE_LOCK:
            if self.state is not JobState.HELD:
                return False
            self.state, self.error = state, error
            return True

    @property
    def lost_event(self) -> Any:
        """Set once the job is lost (``threading.Event``, or ``asyncio.Event`` for async jobs).

        Created on first use: most jobs are never waited on, and events are not free.
        """
        with _STATE_LOCK:
            if self._lost_event is None:
                self._lost_event = self._new_event()
                if self.state is JobState.LOST:
                    self._lost_event.set()
            return self._lost_event

    def _signal_lost(self) -> None:
        with _STATE_LOCK:
            event = self._lost_event
        if event is not None:
            event.set()

    def _new_event(self) -> Any:
        raise NotImplementedError

    def renewed(self, started: float, lease_expires_at: object) -> None:
        """An applied extension sent at ``started``: the lease runs a full term from then."""
        self.deadline = started + self.lease_seconds
        self.renew_at = started + self.lease_seconds / 4
        if isinstance(lease_expires_at, int):
            self.lease_expires_at = lease_expires_at

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.job_id} {self.attempt_id} {self.state.value}>"


class ClaimBatch(Generic[J]):
    """The handles of one claim plus the tracker's pacing hint; iterable like a list."""

    __slots__ = ("jobs", "policy_version", "retry_after_ms")

    def __init__(self, jobs: list[J], retry_after_ms: int, policy_version: int) -> None:
        self.jobs = jobs
        self.retry_after_ms = retry_after_ms
        self.policy_version = policy_version

    def __iter__(self) -> Iterator[J]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return f"<ClaimBatch {len(self.jobs)} jobs retry_after_ms={self.retry_after_ms}>"
