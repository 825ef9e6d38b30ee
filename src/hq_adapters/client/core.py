"""State shared by the sync and async queues: identity, policy cache, pacer, held jobs.

No I/O here. ``flows.py`` describes each operation as a generator of effects over this state;
the sync and async queues differ only in how they perform those effects.
"""

from __future__ import annotations

import random
import secrets
import string
import threading
import time
from collections.abc import Callable, Iterable

from hq_adapters.client.config import Config, parse_tracker_url
from hq_adapters.client.errors import QueueClosed
from hq_adapters.client.jobs import JobBase
from hq_adapters.client.policy import Pacer, PolicyCache
from hq_adapters.client.renewal import LeaseBook, RenewBatch
from hq_adapters.client.wire import jobs_path, policy_path

WORKER_ID_ALPHABET = string.ascii_lowercase + string.digits
WORKER_ID_LENGTH = 7

Clock = Callable[[], float]
Random = Callable[[], float]


def new_worker_id() -> str:
    """7 characters of ``a-z0-9`` from a CSPRNG, as both official SDKs generate."""
    return "".join(secrets.choice(WORKER_ID_ALPHABET) for _ in range(WORKER_ID_LENGTH))


class QueueCore:
    """Everything a project queue knows, independent of how it talks to the tracker.

    ``clock`` is monotonic seconds; ``rng`` draws from ``U[0, 1)`` (jitter and pacing).
    """

    def __init__(
        self,
        config: Config,
        project_id: str,
        *,
        clock: Clock | None = None,
        rng: Random | None = None,
    ) -> None:
        config.validate()
        if not project_id:
            raise ValueError("project_id is required")
        self.endpoint = parse_tracker_url(config.tracker_url, config.allow_http_tracker)
        self.config = config
        self.project_id = project_id
        self.worker_id = new_worker_id()
        self.clock: Clock = clock or time.monotonic
        self.rng: Random = rng or random.random
        self.policies = PolicyCache()
        self.pacer = Pacer()
        self.policy_path = policy_path(project_id)
        self.paths = {
            op: jobs_path(project_id, op) for op in ("claim", "complete", "fail", "extend-lease")
        }
        self.closed = False
        self._book = LeaseBook()
        self._lock = threading.Lock()

    def check_open(self) -> None:
        if self.closed:
            raise QueueClosed(None)

    # -- held jobs (the book is guarded by one lock; callbacks run outside it) ---------------
    def hold(self, jobs: Iterable[JobBase]) -> None:
        with self._lock:
            self._book.add(jobs)

    def held(self) -> list[JobBase]:
        with self._lock:
            return self._book.held()

    def find(self, job_id: object, attempt_id: object) -> JobBase | None:
        with self._lock:
            return self._book.get(job_id, attempt_id)

    def finish(self, job: JobBase) -> None:
        with self._lock:
            self._book.discard(job)
        job.mark_finished()

    def lose(self, job: JobBase, why: str) -> None:
        with self._lock:
            self._book.discard(job)
        job.mark_lost(why)

    def expire_and_collect_due(self) -> list[RenewBatch]:
        """Mark jobs past their local deadline lost; return the renewal batches now due."""
        now = self.clock()
        with self._lock:
            expired = self._book.expired(now)
            batches = self._book.due(now)
        for job in expired:
            job.mark_lost("lease deadline passed")
        return batches

    def settle_renewal(self, batch: RenewBatch, started: float, results: list[dict] | None) -> None:
        with self._lock:
            rejected = self._book.settle(batch, started, results)
        for job in rejected:
            job.mark_lost("renewal rejected")

    def next_wakeup(self) -> float | None:
        with self._lock:
            return self._book.next_wakeup()

    def release_all(self) -> list[JobBase]:
        """Close: no more claims; every held job is released and no longer renewed."""
        self.closed = True
        with self._lock:
            jobs = self._book.drain()
        for job in jobs:
            job.mark_released()
        return jobs
