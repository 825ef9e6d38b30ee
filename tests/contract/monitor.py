"""MonitorPort and bucket pruning (MaintenancePort): the operators' monitor figures."""

from __future__ import annotations

from hq_domain.monitoring import FinishedCounts, WorkerClaimRate
from hq_domain.progress import MINUTE_S, RATE_WINDOW_S
from tests.contract.helpers import (
    RECEIPT,
    claim,
    complete,
    done_item,
    ext_jobs,
    fail,
    fail_item,
    now_s,
    put,
    worker_user,
)

START_S = 1_800_000_000  # minute-aligned
HOUR = 3600


async def _busy_project(store, clock) -> dict[str, int]:
    """p1 (per-worker limit 0.2 QPS, no resets) with one job in each state, p2 empty."""
    clock.set_ns(START_S * 10**9)
    await worker_user(store)
    await put(store, "p1", max_resets=0, worker_claim_qps=0.2)
    await put(store, "p2")
    await store.enqueue("p1", ext_jobs("a", "b", "c", "d", "e", "f"))
    enqueued = now_s(clock)
    clock.advance(30)
    a, b, c = (await claim(store, max_jobs=3, policy_version=1)).jobs
    await complete(store, "p1", done_item(a.job_id, a.attempt_id, (RECEIPT,)))
    await complete(store, "p1", done_item(b.job_id, b.attempt_id, ()))
    await fail(store, "p1", fail_item(c.job_id, c.attempt_id, retryable=False))
    clock.advance(40)  # the next minute's bucket
    await claim(store, max_jobs=1, lease=5, policy_version=1)
    await claim(store, max_jobs=1, lease=600, policy_version=1)
    clock.advance(10)  # the 5 s lease has run out, no sweep ran
    return {"enqueued": enqueued, "first_bucket_ms": START_S * 1000}


class MonitorContract:
    async def test_every_project_is_listed_with_empty_figures(self, store, clock):
        await put(store, "p2")
        await put(store, "p1")
        snap = await store.monitor_snapshot(HOUR, 15 * MINUTE_S)
        assert snap.now_s == now_s(clock)
        assert [p.summary.project.id for p in snap.projects] == ["p1", "p2"]
        p1 = snap.projects[0]
        assert p1.summary == await store.get_project("p1")
        assert (p1.oldest_todo_created_at, p1.expired_wip) == (None, 0)
        assert (p1.finished, p1.history) == (FinishedCounts(), [])
        assert snap.workers == []

    async def test_figures_of_a_busy_project(self, store, clock):
        known = await _busy_project(store, clock)
        snap = await store.monitor_snapshot(HOUR, 15 * MINUTE_S)
        p1, p2 = snap.projects
        assert p1.summary == await store.get_project("p1")
        assert p1.summary.job_counts.as_dict() == {
            "todo": 1, "wip": 2, "done": 2, "failed": 1, "reset_exhausted": 0}  # fmt: skip
        # the same queue figures as /metrics reads
        assert (p1.oldest_todo_created_at, p1.expired_wip) == (known["enqueued"], 1)
        assert (await store.queue_health())["p1"] == (known["enqueued"], 1)
        assert p1.finished == FinishedCounts(done=2, failed=1, reset_exhausted=0,
                                             done_with_receipts=1)  # fmt: skip
        assert p2.finished == FinishedCounts() and p2.summary.job_counts.as_dict()["todo"] == 0
        assert snap.workers == [
            WorkerClaimRate(
                project_id="p1", worker_id="w1", policy_version=1, current_policy_version=1,
                worker_claim_qps=0.2, buckets=2, claim_requests=3, jobs_dispatched=5,
                peak_claim_requests=2, last_bucket_started_at_ms=known["first_bucket_ms"] + 60_000,
            )
        ]  # fmt: skip

    async def test_windows_bound_the_finished_counts_and_buckets(self, store, clock):
        known = await _busy_project(store, clock)
        clock.advance(HOUR - 50)  # the completions (30 s after the start) are now 1 h ago
        snap = await store.monitor_snapshot(HOUR, MINUTE_S + 10)
        assert snap.projects[0].finished == FinishedCounts(2, 1, 0, 1)  # on the edge: counted
        assert snap.workers == []
        clock.advance(1)
        snap = await store.monitor_snapshot(HOUR, HOUR)
        assert snap.projects[0].finished == FinishedCounts()
        [w] = snap.workers  # only the second minute's bucket started in the last hour
        assert (w.buckets, w.claim_requests, w.last_bucket_started_at_ms) == (
            1, 2, known["first_bucket_ms"] + 60_000)  # fmt: skip

    async def test_a_worker_on_an_old_policy_is_reported_stale(self, store, clock):
        await _busy_project(store, clock)
        await put(store, "p1", max_resets=0, worker_claim_qps=None)  # policy version 2
        [w] = (await store.monitor_snapshot(HOUR, HOUR)).workers
        assert (w.policy_version, w.current_policy_version, w.worker_claim_qps) == (1, 2, None)
        assert w.stale_policy and not w.over_limit

    async def test_history_is_the_rate_window(self, store, clock):
        await _busy_project(store, clock)
        await store.record_history()
        first = now_s(clock)
        clock.advance(RATE_WINDOW_S - MINUTE_S)
        await store.record_history()
        snap = await store.monitor_snapshot(HOUR, HOUR)
        assert [h.minute_s for h in snap.projects[0].history] == [
            first - first % MINUTE_S, now_s(clock) - now_s(clock) % MINUTE_S]
        assert snap.projects[0].history == (await store.all_history(now_s(clock) - RATE_WINDOW_S))["p1"]
        clock.advance(MINUTE_S)
        assert len((await store.monitor_snapshot(HOUR, HOUR)).projects[0].history) == 1

    async def test_prune_deletes_buckets_started_before_the_cutoff(self, store, clock):
        known = await _busy_project(store, clock)
        second = known["first_bucket_ms"] + 60_000
        assert await store.prune_claim_buckets(known["first_bucket_ms"]) == 0  # at cutoff: kept
        assert await store.prune_claim_buckets(second) == 1
        [w] = (await store.monitor_snapshot(HOUR, HOUR)).workers
        assert w.last_bucket_started_at_ms == second and w.buckets == 1
        assert await store.prune_claim_buckets(second) == 0
        assert await store.prune_claim_buckets(second + 1) == 1
        assert (await store.monitor_snapshot(HOUR, HOUR)).workers == []
