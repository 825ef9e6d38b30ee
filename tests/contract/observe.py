"""ObservePort: history snapshots and retention, failure groups, worker activity (issue 14)."""

from __future__ import annotations

from hq_domain.progress import (
    HOUR_S,
    MINUTE_RETENTION_S,
    MINUTE_S,
    WORKER_MINUTE_RETENTION_S,
    minute_of,
)
from tests.contract.helpers import (
    WORKER,
    WORKER_USER,
    claim,
    complete,
    counts,
    done_item,
    ext_jobs,
    fail,
    fail_item,
    now_s,
    put,
    worker_user,
)


async def _setup(store, n=4, project="p1"):
    await worker_user(store)
    await put(store, project, max_resets=0)
    await store.enqueue(project, ext_jobs(*[f"{project}-{i}" for i in range(n)]))


class ObserveContract:
    async def test_ping_answers_on_any_store(self, store):
        """Readiness (``/readyz``) awaits ``ping``: every adapter has it, and it succeeds on an
        empty store (no such token or project is an answer, not a failure)."""
        assert await store.ping(1.0) is None
        await put(store, "p1")
        assert await store.ping(1.0) is None

    async def test_history_snapshots_counts_per_minute(self, store, clock):
        await _setup(store)
        assert await store.record_history() == 1
        t0 = minute_of(now_s(clock))
        [a, _b] = (await claim(store, max_jobs=2)).jobs
        await complete(store, "p1", done_item(a.job_id, a.attempt_id))
        clock.advance(MINUTE_S)
        await store.record_history()
        await store.record_history()  # a second snapshot in one minute replaces the first
        points = await store.project_history("p1", 0)
        assert [p.minute_s for p in points] == [t0, t0 + MINUTE_S]
        assert points[0].counts.as_dict() == {
            "todo": 4, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0}
        assert points[1].counts.as_dict() == await counts(store)
        assert await store.project_history("p1", t0 + 1) == points[1:]
        assert list(await store.all_history(0)) == ["p1"]
        assert await store.project_history("nope", 0) == []

    async def test_fold_keeps_counts(self, store, clock):
        await _setup(store)
        [a, _b] = (await claim(store, max_jobs=2)).jobs
        await complete(store, "p1", done_item(a.job_id, a.attempt_id))
        before = await counts(store)
        assert before == {"todo": 2, "wip": 1, "done": 1, "failed": 0, "reset_exhausted": 0}
        await store.fold_counts()
        assert await counts(store) == before
        await store.fold_counts()
        assert [s.job_counts.as_dict() for s in await store.list_projects()] == [before]

    async def test_history_keeps_hourly_points_after_a_week(self, store, clock):
        await _setup(store, n=1)
        clock.set_ns((10 * HOUR_S + 3 * MINUTE_S) * 10**9)  # 10:03
        start = now_s(clock)
        await store.record_history()
        clock.set_ns((11 * HOUR_S) * 10**9)  # 11:00, on the hour
        await store.record_history()
        clock.set_ns((start + MINUTE_RETENTION_S - 30) * 10**9)  # 10:03 is just inside a week
        await store.record_history()
        minutes = [p.minute_s for p in await store.project_history("p1", 0)]
        assert minutes[:2] == [minute_of(start), 11 * HOUR_S]
        clock.advance(MINUTE_S * 60)  # 10:03 is now older than the retention; 11:00 stays
        await store.record_history()
        minutes = [p.minute_s for p in await store.project_history("p1", 0)]
        assert minutes[0] == 11 * HOUR_S and minute_of(start) not in minutes

    async def test_history_goes_with_the_project(self, store, clock):
        await _setup(store, n=1)
        await store.record_history()
        await put(store, "p1", status="archived")
        await store.delete_project("p1")
        await put(store, "p1")
        assert await store.project_history("p1", 0) == []

    async def test_recent_failures_grouped_by_code(self, store, clock):
        await _setup(store, n=3)
        jobs = (await claim(store, max_jobs=3)).jobs
        await fail(store, "p1", *[fail_item(j.job_id, j.attempt_id, retryable=False) for j in jobs[:2]])
        [g] = await store.recent_failures("p1", 100)
        assert (g.jobs, g.last_job_id) == (2, jobs[1].job_id)
        assert g.code and isinstance(g.last_message, str)
        assert await store.recent_failures("p1", 1) == [
            type(g)(g.code, 1, jobs[1].job_id, g.last_message)]
        assert await store.recent_failures("nope", 10) == []

    async def test_worker_activity(self, store, clock):
        await _setup(store, n=3)
        await put(store, "p1", max_resets=0, worker_claim_qps=100.0)  # claims are audited
        since = now_s(clock) - 60
        [a, _b] = (await claim(store, max_jobs=2)).jobs
        await complete(store, "p1", done_item(a.job_id, a.attempt_id))
        [w] = await store.worker_activity("p1", since)
        assert (w.worker_id, w.user_id, w.project_id) == (WORKER, WORKER_USER, "p1")
        assert (w.claim_requests, w.jobs_claimed, w.jobs_in_hand) == (1, 2, 1)
        assert w.last_seen_s == now_s(clock)
        assert await store.worker_activity(None, since) == [w]
        assert await store.worker_activity("p2", since) == []
        # outside the window only the job in hand remains
        [late] = await store.worker_activity(None, now_s(clock) + 120)
        assert (late.claim_requests, late.jobs_in_hand) == (0, 1)

    async def test_worker_activity_without_claim_audit(self, store, clock):
        await _setup(store, n=3)
        await claim(store, max_jobs=2)
        clock.advance(30)
        [w] = await store.worker_activity("p1", now_s(clock) - 60)
        assert (w.worker_id, w.jobs_in_hand, w.last_seen_s) == (WORKER, 2, now_s(clock) - 30)

    async def test_queue_health(self, store, clock):
        await _setup(store, n=2)
        created = now_s(clock)
        await claim(store, max_jobs=1, lease=5)
        clock.advance(10)
        assert (await store.queue_health())["p1"] == (created, 1)
        await store.sweep_expired(10)
        assert (await store.queue_health())["p1"] == (created, 0)

    async def _resets(self, store, clock) -> int:
        await store.record_history()
        [point] = await store.project_history("p1", minute_of(now_s(clock)))
        return point.resets

    async def test_resets_are_a_running_total_in_the_history(self, store, clock):
        """Issue 14: every reset (retryable failure, expiry by the sweep or by a claim, also
        into reset_exhausted) adds 1; claims, completions, plain failures, requeues, deletes
        and folds add nothing; the five counts never see it."""
        await _setup(store, n=4)
        await put(store, "p1", max_resets=1)
        assert await self._resets(store, clock) == 0
        [a, b, c, d] = (await claim(store, max_jobs=4, lease=5)).jobs
        await complete(store, "p1", done_item(a.job_id, a.attempt_id))
        await fail(store, "p1", fail_item(d.job_id, d.attempt_id, retryable=False))
        assert await self._resets(store, clock) == 0
        await fail(store, "p1", fail_item(b.job_id, b.attempt_id, retryable=True))
        assert await self._resets(store, clock) == 1
        clock.advance(10)
        assert await store.sweep_expired(10) == 1  # c
        assert await self._resets(store, clock) == 2
        assert sum((await counts(store)).values()) == 4
        # b and c again; both expire and the next claim's sweep exhausts them
        assert len((await claim(store, max_jobs=4, lease=5)).jobs) == 2
        clock.advance(10)
        assert (await claim(store, max_jobs=4)).jobs == []
        assert await counts(store) == {
            "todo": 0, "wip": 0, "done": 1, "failed": 1, "reset_exhausted": 2}
        assert await self._resets(store, clock) == 4
        for job_id in (b.job_id, c.job_id, d.job_id):
            await store.requeue_job("p1", job_id)
        await store.delete_job("p1", a.job_id)
        await store.fold_counts()
        assert await self._resets(store, clock) == 4
        assert await counts(store) == {
            "todo": 3, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0}
        [s] = await store.list_projects()
        assert s.job_counts.as_dict() == await counts(store)

    async def test_resets_go_with_the_project(self, store, clock):
        await _setup(store, n=1)
        [a] = (await claim(store, max_jobs=1)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=True))
        await store.requeue_job("p1", a.job_id)  # reset_exhausted (max_resets 0) → todo
        assert await self._resets(store, clock) == 1
        await put(store, "p1", status="archived")
        await store.delete_project("p1")
        await put(store, "p1")
        await store.fold_counts()
        assert await self._resets(store, clock) == 0

    async def test_worker_minutes_add_up_in_the_window(self, store, clock):
        """Issue 14: tallies flushed by the servers add per worker and minute; the activity
        sums them over its window; a gone project's tallies are skipped; retention prunes."""
        await _setup(store, n=1)
        await put(store, "p2")
        t0 = now_s(clock)
        assert await store.record_worker_minutes({("p1", WORKER): (3, 1), ("p2", "w9"): (1, 0),
                                                  ("gone", WORKER): (5, 5)}) == 2
        assert await store.record_worker_minutes({("p1", WORKER): (2, 0)}) == 1
        assert await store.record_worker_minutes({}) == 0
        [w] = await store.worker_activity("p1", t0 - 60)
        assert (w.worker_id, w.jobs_done, w.jobs_failed) == (WORKER, 5, 1)
        assert (w.jobs_in_hand, w.claim_requests, w.last_seen_s) == (0, 0, minute_of(t0))
        assert {(x.project_id, x.worker_id, x.jobs_done) for x in
                await store.worker_activity(None, t0 - 60)} == {("p1", WORKER, 5), ("p2", "w9", 1)}
        clock.advance(MINUTE_S)
        await store.record_worker_minutes({("p1", WORKER): (1, 0)})
        # a window starting after the first minute ended sees only the second
        [w] = await store.worker_activity("p1", minute_of(t0) + MINUTE_S)
        assert (w.jobs_done, w.jobs_failed) == (1, 0)
        [w] = await store.worker_activity("p1", minute_of(t0))
        assert w.jobs_done == 6
        await put(store, "p2", status="archived")
        await store.delete_project("p2")
        assert [x.project_id for x in await store.worker_activity(None, t0 - 60)] == ["p1"]
        clock.advance(WORKER_MINUTE_RETENTION_S)
        await store.record_worker_minutes({})
        assert await store.worker_activity("p1", 0) == []
