"""Metrics read from the database at scrape time: the same answer from any process.

The figures are the monitor's (:mod:`hq_domain.monitoring`): job counts from ``list_projects``
and queue health from ``queue_health``, the reads ``tracker monitor``'s snapshot is made of."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from hq_domain.clock import Clock, seconds
from hq_domain.jobs import ALL_STATUSES
from hq_domain.monitoring import oldest_todo_age
from hq_domain.ports import Store

SCRAPE_TIMEOUT_S = 5.0


class DatabaseCollector(Collector):
    """Runs its reads on the server's event loop (the pool belongs to it) from the metrics
    thread; a scrape that cannot read the database reports ``hq_database_up 0``."""

    def __init__(self, store: Store, clock: Clock, loop: asyncio.AbstractEventLoop) -> None:
        self._store, self._clock, self._loop = store, clock, loop

    async def _read(self):  # type: ignore[no-untyped-def]
        return await self._store.list_projects(), await self._store.queue_health()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("hq_database_up", "1 if the scrape could read the database.")
        try:
            fut = asyncio.run_coroutine_threadsafe(self._read(), self._loop)
            summaries, health = fut.result(SCRAPE_TIMEOUT_S)
        except Exception:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        now_s = seconds(self._clock.now_ns())
        jobs = GaugeMetricFamily(
            "hq_jobs", "Jobs by project and status (exact, O(1) counters).", labels=["project", "status"]
        )
        oldest = GaugeMetricFamily(
            "hq_oldest_todo_age_seconds", "Age of the oldest waiting job (0 when none waits).",
            labels=["project"],
        )
        expired = GaugeMetricFamily(
            "hq_expired_wip_jobs", "WIP jobs whose lease ran out and that no sweep reset yet.",
            labels=["project"],
        )
        for s in summaries:
            pid = s.project.id
            counts = s.job_counts.as_dict()
            for status in ALL_STATUSES:
                jobs.add_metric([pid, status.value], counts[status.value])
            created, exp = health.get(pid, (None, 0))
            oldest.add_metric([pid], oldest_todo_age(created, now_s) or 0)
            expired.add_metric([pid], exp)
        yield jobs
        yield oldest
        yield expired
