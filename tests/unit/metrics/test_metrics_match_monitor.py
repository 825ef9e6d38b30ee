"""``/metrics`` and ``tracker monitor`` show one figure from one read: the same job counts,
oldest-todo age and expired leases for the same store at the same instant."""

from __future__ import annotations

import asyncio

from hq_adapters.memory import MemoryStore
from hq_apps.cli import ops
from hq_apps.metrics.database import DatabaseCollector
from hq_domain.clock import ManualClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest


async def test_database_gauges_are_the_monitors_figures() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    for pid in ("a", "b"):
        await store.put_project(pid, ProjectPut(status="active"))
    await store.enqueue("a", [JobSpec(f"v{i}", id=f"j{i}") for i in range(4)])
    clock.advance(100)
    await store.claim("u", "a", ClaimRequest("w", 2, 10, (), 1))
    clock.advance(30)  # both leases have run out

    collector = DatabaseCollector(store, clock, asyncio.get_running_loop())
    families = await asyncio.to_thread(lambda: list(collector.collect()))
    gauges = {(s.name, tuple(s.labels.values())): s.value for f in families for s in f.samples}
    report = await ops.monitor_report(store, window_s=3600, bucket_window_s=900, log_file=None)

    assert [p["project_id"] for p in report["projects"]] == ["a", "b"]
    for p in report["projects"]:
        pid = p["project_id"]
        for status, n in p["job_counts"].items():
            assert gauges["hq_jobs", (pid, status)] == n
        assert gauges["hq_oldest_todo_age_seconds", (pid,)] == (p["oldest_todo_age_seconds"] or 0)
        assert gauges["hq_expired_wip_jobs", (pid,)] == p["expired_wip"]
    a = report["projects"][0]
    assert (a["oldest_todo_age_seconds"], a["expired_wip"], a["job_counts"]["wip"]) == (130, 2, 2)
