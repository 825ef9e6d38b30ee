"""Per-project heaps that keep claims and expiry sweeps from scanning every row.

Both are lazy: entries are pushed when a row enters the indexed state and are checked against
the row when they reach the top, so leaving that state needs no bookkeeping. A stale entry is
one whose row is gone, is no longer in the state, or (leases) carries another deadline.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from hq_domain.jobs import JOB_TYPES, Job, JobStatus, type_accepted
from hq_domain.projects import ClaimOrder
from hq_domain.worker import order_key

Entry = tuple[int, int]  # (created_at | random_key | lease_expires_at, job_id)


class TodoQueues:
    """Todo rows by claim position, one heap per (claim order, effective type); a claim reads
    the heaps of the types its ``accept_types`` accepts (hq_domain.jobs.type_accepted)."""

    __slots__ = ("_heaps", "_size")

    def __init__(self) -> None:
        self._heaps: dict[tuple[ClaimOrder, str], list[Entry]] = {
            (o, t): [] for o in ClaimOrder for t in JOB_TYPES
        }
        self._size = 0

    def push(self, job: Job) -> None:
        for order in ClaimOrder:
            entry = order_key(order, job.created_at, job.random_key, job.job_id)
            heapq.heappush(self._heaps[(order, job.effective_type)], entry)
        self._size += len(ClaimOrder)

    def _live_heaps(self, order: ClaimOrder, types: Iterable[str], jobs: Mapping[int, Job]) -> list[list[Entry]]:
        accept = tuple(types)
        heaps = [self._heaps[(order, t)] for t in JOB_TYPES if type_accepted(t, accept)]
        for h in heaps:
            while h and not _is_todo(jobs.get(h[0][1])):
                heapq.heappop(h)
                self._size -= 1
        return heaps

    def any(self, order: ClaimOrder, types: Iterable[str], jobs: Mapping[int, Job]) -> bool:
        return any(self._live_heaps(order, types, jobs))

    def take(self, order: ClaimOrder, types: Iterable[str], limit: int, jobs: Mapping[int, Job]) -> list[Job]:
        """Pop up to ``limit`` distinct todo rows in claim order (the caller makes them wip)."""
        out: list[Job] = []
        seen: set[int] = set()
        while len(out) < limit:
            heaps = [h for h in self._live_heaps(order, types, jobs) if h]
            if not heaps:
                break
            best = min(heaps, key=lambda h: h[0])
            _, job_id = heapq.heappop(best)
            self._size -= 1
            if job_id not in seen:  # a row re-queued before its old entry surfaced
                seen.add(job_id)
                out.append(jobs[job_id])
        return out

    @property
    def size(self) -> int:
        """Entries held, live and stale (each todo row has one per claim order)."""
        return self._size

    def needs_rebuild(self, todo_count: int) -> bool:
        return self._size > 4 * todo_count + 256

    def rebuild(self, todo: Iterable[Job]) -> None:
        """Drop stale entries (rows that left todo under the other claim order's heaps)."""
        self.__init__()  # type: ignore[misc]
        for job in todo:
            self.push(job)


class LeaseHeap:
    """WIP rows by (lease deadline, job_id)."""

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        self._heap: list[Entry] = []

    def push(self, job: Job) -> None:
        assert job.lease_expires_at is not None
        heapq.heappush(self._heap, (job.lease_expires_at, job.job_id))

    def pop_expired(self, now_s: int, limit: int, jobs: Mapping[int, Job]) -> list[Job]:
        """Up to ``limit`` rows whose live entry says expired, oldest deadline first."""
        out: dict[int, Job] = {}
        h = self._heap
        while h and len(out) < limit and h[0][0] <= now_s:
            deadline, job_id = heapq.heappop(h)
            job = jobs.get(job_id)
            if job is not None and job.status is JobStatus.WIP and job.lease_expires_at == deadline:
                out[job_id] = job  # a duplicate entry (same deadline) collapses here
        return list(out.values())


def _is_todo(job: Job | None) -> bool:
    return job is not None and job.status is JobStatus.TODO
