"""complete / fail / extend-lease (spec §1.7.12–15, §2.2–2.3, D1)."""

from __future__ import annotations

import pytest

from hq_domain.errors import NotFound, PermissionDenied, ProjectNotActive
from hq_domain.jobs import JobStatus
from hq_domain.users import Role, UserStatus
from tests.contract.helpers import (
    ERROR,
    OTHER_WORKER,
    OUTCOME,
    RECEIPT,
    WORKER,
    WORKER_USER,
    claim,
    complete,
    counts,
    done_item,
    ext_jobs,
    extend,
    fail,
    fail_item,
    now_s,
    put,
    ref,
    worker_user,
)


async def _claimed(store, n=1, project="p1", lease=60, **put_kw):
    await worker_user(store)
    await put(store, project, **put_kw)
    await store.enqueue(project, ext_jobs(*[f"j{i}" for i in range(n)]))
    return (await claim(store, project, lease=lease)).jobs


class MutationContract:
    async def test_complete_stores_outcome_and_receipts(self, store, clock):
        a, b = await _claimed(store, 2)
        clock.advance(3)
        res = await complete(store, "p1", done_item(a.job_id, a.attempt_id, (RECEIPT,)), done_item(b.job_id, b.attempt_id, None))
        assert [(r.job_id, r.attempt_id, r.applied, r.job_status, r.lease_expires_at) for r in res] == [
            (a.job_id, a.attempt_id, True, JobStatus.DONE, None),
            (b.job_id, b.attempt_id, True, JobStatus.DONE, None),
        ]
        ja = await store.get_job("p1", a.job_id)
        assert ja.status is JobStatus.DONE
        assert (ja.attempt_id, ja.worker_id, ja.lease_expires_at) == (None, None, None)
        assert ja.last_worker_id == WORKER
        assert ja.outcome == OUTCOME.to_json()
        assert ja.artifact_receipts == [RECEIPT.to_json()]
        assert ja.completed_at == ja.updated_at == now_s(clock)
        assert ja.reset_count == 0 and ja.execution_error is None
        jb = await store.get_job("p1", b.job_id)
        assert jb.artifact_receipts is None  # null stays null
        assert (await counts(store))["done"] == 2

    async def test_complete_with_empty_receipts_and_bare_outcome(self, store, clock):
        from hq_domain.jobs import Outcome
        from hq_domain.worker import CompleteItem

        [a] = await _claimed(store)
        await complete(store, "p1", CompleteItem(a.job_id, a.attempt_id, Outcome("skipped"), ()))
        j = await store.get_job("p1", a.job_id)
        assert j.outcome == {"kind": "skipped", "code": None, "uri": None, "meta": None}
        assert j.artifact_receipts == []

    async def test_complete_clears_error_keeps_reset_count(self, store, clock):
        [a] = await _claimed(store)
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=True))
        [a2] = (await claim(store)).jobs
        await complete(store, "p1", done_item(a2.job_id, a2.attempt_id))
        j = await store.get_job("p1", a.job_id)
        assert j.status is JobStatus.DONE and j.execution_error is None and j.reset_count == 1

    async def test_rejections(self, store, clock):
        a, b, c, d = await _claimed(store, 4, lease=10)
        await complete(store, "p1", done_item(d.job_id, d.attempt_id))
        await put(store, "p2")
        await store.enqueue("p2", ext_jobs("other"))
        [o] = (await claim(store, "p2")).jobs
        items = [
            done_item(a.job_id, b.attempt_id),  # attempt of another job
            done_item(a.job_id, "at_wrong"),  # unknown attempt
            done_item(o.job_id, o.attempt_id),  # job of another project
            done_item(d.job_id, d.attempt_id),  # already finalized (replay)
            done_item(999_999, a.attempt_id),  # no such job
            done_item(c.job_id, c.attempt_id),  # valid
            done_item(c.job_id, c.attempt_id),  # duplicate in one request
        ]
        res = await complete(store, "p1", *items)
        assert [r.applied for r in res] == [False] * 5 + [True, False]
        assert [(r.job_id, r.attempt_id) for r in res] == [(i.job_id, i.attempt_id) for i in items]
        rejected = res[0]
        assert rejected.job_status is None and rejected.lease_expires_at is None
        # another worker_id never matches, even with the right attempt
        assert [r.applied for r in await complete(store, "p1", done_item(a.job_id, a.attempt_id), worker=OTHER_WORKER)] == [False]
        # rejections did not touch the rows
        assert (await store.get_job("p1", a.job_id)).status is JobStatus.WIP
        assert (await store.get_job("p2", o.job_id)).status is JobStatus.WIP
        assert (await store.get_job("p1", d.job_id)).outcome == OUTCOME.to_json()

    async def test_lease_boundary(self, store, clock):
        a, b = await _claimed(store, 2, lease=10)
        clock.advance(9.999)
        assert (await complete(store, "p1", done_item(a.job_id, a.attempt_id)))[0].applied
        clock.advance(0.001)  # now == lease_expires_at: expired
        res = await fail(store, "p1", fail_item(b.job_id, b.attempt_id))
        assert not res[0].applied
        assert not (await extend(store, "p1", 60, ref(b.job_id, b.attempt_id)))[0].applied
        # no reset on mutation: the row is still wip until a sweep
        assert (await store.get_job("p1", b.job_id)).status is JobStatus.WIP

    async def test_fail_non_retryable(self, store, clock):
        [a] = await _claimed(store)
        clock.advance(2)
        [r] = await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=False))
        assert r.applied and r.job_status is JobStatus.FAILED and r.lease_expires_at is None
        j = await store.get_job("p1", a.job_id)
        assert j.status is JobStatus.FAILED and j.reset_count == 0
        assert j.completed_at == j.updated_at == now_s(clock)
        assert j.execution_error == ERROR.to_json()
        assert j.outcome is None and j.artifact_receipts == []
        assert (j.attempt_id, j.worker_id, j.lease_expires_at) == (None, None, None)
        assert j.last_worker_id == WORKER  # who failed it (dashboard; not on the wire)

    @pytest.mark.parametrize(("max_resets", "todo_rounds"), [(3, 3), (0, 0), (1, 1)])
    async def test_retryable_fail_arithmetic(self, store, clock, max_resets, todo_rounds):
        [a] = await _claimed(store, max_resets=max_resets)
        for n in range(1, todo_rounds + 1):
            [r] = await fail(store, "p1", fail_item(a.job_id, a.attempt_id))
            assert r.job_status is JobStatus.TODO
            j = await store.get_job("p1", a.job_id)
            assert (j.status, j.reset_count, j.completed_at) == (JobStatus.TODO, n, None)
            assert j.execution_error == ERROR.to_json()
            [a] = (await claim(store)).jobs
        clock.advance(1)
        [r] = await fail(store, "p1", fail_item(a.job_id, a.attempt_id))
        assert r.job_status is JobStatus.RESET_EXHAUSTED
        j = await store.get_job("p1", a.job_id)
        assert (j.status, j.reset_count) == (JobStatus.RESET_EXHAUSTED, max_resets + 1)
        assert j.completed_at == now_s(clock)
        assert (await claim(store)).jobs == []

    async def test_max_resets_read_at_time_of_reset(self, store, clock):
        [a] = await _claimed(store, max_resets=3)
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id))
        await fail(store, "p1", fail_item(a.job_id, (await claim(store)).jobs[0].attempt_id))
        await put(store, max_resets=1)  # lowering does not exhaust retroactively
        j = await store.get_job("p1", a.job_id)
        assert (j.status, j.reset_count) == (JobStatus.TODO, 2)
        [a] = (await claim(store)).jobs
        [r] = await fail(store, "p1", fail_item(a.job_id, a.attempt_id))
        assert r.job_status is JobStatus.RESET_EXHAUSTED
        assert (await store.get_job("p1", a.job_id)).reset_count == 3

    async def test_fail_keeps_outcome_columns_and_nulls_completed_at_on_retry(self, store, clock):
        [a] = await _claimed(store)
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=False))
        await store.requeue_job("p1", a.job_id)
        [a] = (await claim(store)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=True))
        j = await store.get_job("p1", a.job_id)
        assert j.completed_at is None and j.outcome is None and j.artifact_receipts == []

    async def test_extend_lease(self, store, clock):
        a, b = await _claimed(store, 2, lease=100)
        clock.advance(10)
        t = now_s(clock)
        res = await extend(store, "p1", 500, ref(a.job_id, a.attempt_id), ref(b.job_id, "at_x"), ref(a.job_id, a.attempt_id))
        assert [(r.applied, r.job_status, r.lease_expires_at) for r in res] == [
            (True, JobStatus.WIP, t + 500), (False, None, None), (False, None, None),
        ]
        ja = await store.get_job("p1", a.job_id)
        assert ja.lease_expires_at == t + 500 and ja.updated_at == t
        # a shorter extension keeps the stored deadline but reports now + extend_seconds
        [r] = await extend(store, "p1", 5, ref(a.job_id, a.attempt_id))
        assert r.applied and r.lease_expires_at == t + 5
        assert (await store.get_job("p1", a.job_id)).lease_expires_at == t + 500
        # the extension keeps the job alive past its original lease
        clock.advance(200)
        [again] = (await claim(store)).jobs  # the sweep reset b only; a is still live
        assert again.job_id == b.job_id
        assert (await store.get_job("p1", a.job_id)).status is JobStatus.WIP
        assert (await complete(store, "p1", done_item(a.job_id, a.attempt_id)))[0].applied

    async def test_draining_finishes_in_flight_work(self, store, clock):
        a, b, c = await _claimed(store, 3)
        await put(store, status="draining")
        assert (await complete(store, "p1", done_item(a.job_id, a.attempt_id)))[0].applied
        assert (await fail(store, "p1", fail_item(b.job_id, b.attempt_id)))[0].applied
        assert (await extend(store, "p1", 30, ref(c.job_id, c.attempt_id)))[0].applied
        with pytest.raises(ProjectNotActive):
            await claim(store)
        await put(store, status="archived")
        with pytest.raises(ProjectNotActive, match=r"^project is not active$"):
            await complete(store, "p1", done_item(c.job_id, c.attempt_id))
        with pytest.raises(ProjectNotActive):
            await fail(store, "p1", fail_item(c.job_id, c.attempt_id))
        with pytest.raises(ProjectNotActive):
            await extend(store, "p1", 30, ref(c.job_id, c.attempt_id))
        assert (await store.get_job("p1", c.job_id)).status is JobStatus.WIP

    async def test_gates_on_mutations(self, store, clock):
        [a] = await _claimed(store)
        with pytest.raises(NotFound, match=r"^project not found$"):
            await complete(store, "nope", done_item(a.job_id, a.attempt_id))
        await store.put_user(WORKER_USER, UserStatus.SUSPENDED, [Role.WORKER])
        with pytest.raises(PermissionDenied, match=r"^active worker role required$"):
            await complete(store, "p1", done_item(a.job_id, a.attempt_id))
        with pytest.raises(PermissionDenied):
            await fail(store, "p1", fail_item(a.job_id, a.attempt_id))
        with pytest.raises(PermissionDenied):
            await extend(store, "p1", 10, ref(a.job_id, a.attempt_id))

    async def test_user_identity_is_not_part_of_the_match(self, store, clock):
        [a] = await _claimed(store)
        await worker_user(store, "someone-else")
        res = await store.complete("someone-else", "p1", "w1", [done_item(a.job_id, a.attempt_id)])
        assert res[0].applied

    async def test_mutations_upsert_worker_mapping(self, store, clock):
        [a] = await _claimed(store)
        await worker_user(store, "u2")
        await worker_user(store, "u3")
        await worker_user(store, "u4")
        await store.extend_lease("u2", "p1", "wx", 10, [ref(a.job_id, a.attempt_id)])
        assert [m.user_id for m in await store.list_worker_mappings("wx", 5)] == ["u2"]
        await store.fail("u3", "p1", "wx", [fail_item(a.job_id, a.attempt_id)])
        assert [m.user_id for m in await store.list_worker_mappings("wx", 5)] == ["u3"]
        await store.complete("u4", "p1", "wx", [done_item(a.job_id, a.attempt_id)])
        assert [m.user_id for m in await store.list_worker_mappings("wx", 5)] == ["u4"]
