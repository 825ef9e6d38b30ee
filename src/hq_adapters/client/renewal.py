"""The book of held jobs and the renewal schedule (spec §6.2).

Each held attempt is renewed every quarter lease with ``extend_seconds`` = its lease; due jobs
are grouped by lease and sent in batches of at most 256. A job whose local deadline (claim or
last applied renewal start + lease) passes is lost. Pure bookkeeping; the renewer thread/task
only sends the batches this returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hq_adapters.client.jobs import JobBase, JobState
from hq_adapters.client.wire import MAX_BATCH_ITEMS, chunks


@dataclass(slots=True)
class RenewBatch:
    lease_seconds: int
    jobs: list[JobBase]

    @property
    def earliest_deadline(self) -> float:
        return min(job.deadline for job in self.jobs)


class LeaseBook:
    """Held jobs keyed by ``(job_id, attempt_id)``. Callers serialise access (one lock)."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[int, str], JobBase] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def add(self, jobs: Iterable[JobBase]) -> None:
        for job in jobs:
            self._jobs[(job.job_id, job.attempt_id)] = job

    def get(self, job_id: Any, attempt_id: Any) -> JobBase | None:
        try:
            return self._jobs.get((job_id, attempt_id))
        except TypeError:  # unhashable ids from a caller's item: not ours
            return None

    def discard(self, job: JobBase) -> None:
        self._jobs.pop((job.job_id, job.attempt_id), None)

    def held(self) -> list[JobBase]:
        return list(self._jobs.values())

    def expired(self, now: float) -> list[JobBase]:
        """Remove and return held jobs whose local deadline has passed (caller marks them lost)."""
        gone = [job for job in self._jobs.values() if now >= job.deadline]
        for job in gone:
            self.discard(job)
        return gone

    def due(self, now: float) -> list[RenewBatch]:
        """Jobs due for renewal, grouped by lease, ≤ 256 per batch, earliest deadline first."""
        by_lease: dict[int, list[JobBase]] = defaultdict(list)
        for job in self._jobs.values():
            if not job.renewing and job.state is JobState.HELD and now >= job.renew_at:
                by_lease[job.lease_seconds].append(job)
        batches = []
        for lease, jobs in sorted(by_lease.items()):
            jobs.sort(key=lambda j: j.deadline)
            for part in chunks(jobs, MAX_BATCH_ITEMS):
                for job in part:
                    job.renewing = True
                batches.append(RenewBatch(lease, part))
        return batches

    def settle(
        self, batch: RenewBatch, started: float, results: list[dict[str, Any]] | None
    ) -> list[JobBase]:
        """Apply a batch's outcome; returns the jobs whose renewal was rejected (now lost).

        ``results is None`` means the request failed: nothing changes, try again a quarter
        lease later (the local deadline still applies).
        """
        rejected = []
        for index, job in enumerate(batch.jobs):
            job.renewing = False
            if results is None:
                job.renew_at = started + job.lease_seconds / 4
            elif results[index]["status"] == "applied":
                job.renewed(started, results[index].get("lease_expires_at"))
            else:
                self.discard(job)
                rejected.append(job)
        return rejected

    def next_wakeup(self) -> float | None:
        """When the renewer must next look: the earliest renewal or deadline of a held job."""
        times = [
            job.deadline if job.renewing else min(job.renew_at, job.deadline)
            for job in self._jobs.values()
        ]
        return min(times, default=None)

    def drain(self) -> list[JobBase]:
        """Forget every job (queue closing); the caller marks them released."""
        jobs = list(self._jobs.values())
        self._jobs.clear()
        return jobs
