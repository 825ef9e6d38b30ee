"""Jobs done and failed per worker, counted in a server process's memory (issue 14).

The complete and fail routes already know which items they applied, so each adds them here
with a plain dict update (no await, no lock, no I/O: the request path pays a dict increment);
the background loop drains the tally every history interval and adds it to the per-minute
table through :meth:`hq_domain.ports.ObservePort.record_worker_minutes`. A process that dies
before its next flush loses at most one interval of counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hq_domain.worker import ItemResult

WorkerKey = tuple[str, str]
"""(project_id, worker_id)."""
Tallies = Mapping[WorkerKey, tuple[int, int]]
"""(project_id, worker_id) → (jobs done, jobs failed)."""


class WorkerTally:
    """Per (project, worker): completions applied and failures applied (a retryable failure
    counts too: the worker reported it failed, whatever the job's next status)."""

    __slots__ = ("_done", "_failed")

    def __init__(self) -> None:
        self._done: dict[WorkerKey, int] = {}
        self._failed: dict[WorkerKey, int] = {}

    def completed(self, project_id: str, worker_id: str, results: Iterable[ItemResult]) -> None:
        self._add(self._done, project_id, worker_id, results)

    def failed(self, project_id: str, worker_id: str, results: Iterable[ItemResult]) -> None:
        self._add(self._failed, project_id, worker_id, results)

    @staticmethod
    def _add(
        into: dict[WorkerKey, int], project_id: str, worker_id: str, results: Iterable[ItemResult]
    ) -> None:
        n = sum(1 for r in results if r.applied)
        if n:
            key = (project_id, worker_id)
            into[key] = into.get(key, 0) + n

    def drain(self) -> dict[WorkerKey, tuple[int, int]]:
        """Everything counted since the last drain, and start again from zero."""
        done, failed = self._done, self._failed
        self._done, self._failed = {}, {}
        return {k: (done.get(k, 0), failed.get(k, 0)) for k in done.keys() | failed.keys()}

    def restore(self, tallies: Tallies) -> None:
        """Give back a drained tally whose flush failed, so the next flush carries it."""
        for key, (d, f) in tallies.items():
            if d:
                self._done[key] = self._done.get(key, 0) + d
            if f:
                self._failed[key] = self._failed.get(key, 0) + f
