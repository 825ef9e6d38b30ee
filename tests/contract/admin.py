"""Project administration and job views (spec §1.7.1–1.7.3, §1.7.6–1.7.8)."""

from __future__ import annotations

import pytest

from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.jobs import JobStatus
from hq_domain.projects import ClaimOrder, IdentityMode, ProjectStatus
from tests.contract.helpers import (
    OUTCOME,
    all_jobs,
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

ZERO = {"todo": 0, "wip": 0, "done": 0, "failed": 0, "reset_exhausted": 0}


class ProjectAdminContract:
    async def test_create_defaults(self, store, clock):
        s = await put(store)
        p = s.project
        assert (p.id, p.status, p.identity_mode, p.claim_order) == (
            "p1", ProjectStatus.ACTIVE, IdentityMode.EXTERNAL_ID, ClaimOrder.FIFO,
        )
        assert (p.dispatch_qps, p.worker_claim_qps) == (None, None)
        assert (p.max_jobs_per_claim, p.max_resets, p.recommended_lease_seconds) == (256, 3, 300)
        assert p.client_versions == () and p.policy_version == 1
        assert p.created_at == p.updated_at == now_s(clock)
        assert s.job_counts.as_dict() == ZERO
        got = await store.get_project("p1")
        assert got.project == p and got.job_counts.as_dict() == ZERO

    async def test_update_is_full_replacement(self, store, clock):
        await put(
            store, identity_mode="none", claim_order="random", dispatch_qps=3.0, worker_claim_qps=1.5,
            max_jobs_per_claim=9, max_resets=0, recommended_lease_seconds=60, client_versions=("b", "a"),
        )
        created = (await store.get_project("p1")).project
        assert created.client_versions == ("a", "b")
        clock.advance(10)
        p = (await put(store, status="draining")).project
        assert p.status is ProjectStatus.DRAINING
        assert (p.identity_mode, p.claim_order) == (IdentityMode.NONE, ClaimOrder.RANDOM)  # kept
        assert (p.dispatch_qps, p.worker_claim_qps, p.max_jobs_per_claim) == (None, None, 256)
        assert (p.max_resets, p.recommended_lease_seconds, p.client_versions) == (3, 300, ())
        assert p.created_at == created.created_at and p.updated_at == now_s(clock)
        assert p.policy_version == 2

    async def test_identity_mode_is_immutable(self, store, clock):
        await put(store, identity_mode="unique_value", max_resets=1)
        with pytest.raises(InvalidRequest, match=r"^project identity mode cannot be changed$"):
            await put(store, identity_mode="none", max_resets=7, status="archived")
        p = (await store.get_project("p1")).project
        assert (p.identity_mode, p.max_resets, p.status) == (IdentityMode.UNIQUE_VALUE, 1, ProjectStatus.ACTIVE)
        assert (await put(store, identity_mode="unique_value", max_resets=1)).project.policy_version == 1

    async def test_invalid_put_is_rejected(self, store, clock):
        with pytest.raises(InvalidRequest):
            await put(store, dispatch_qps=0.0)
        assert await store.get_project("p1") is None

    @pytest.mark.parametrize(
        ("change", "bumps"),
        [
            ({"dispatch_qps": 1.0}, True),
            ({"worker_claim_qps": 1.0}, True),
            ({"max_jobs_per_claim": 10}, True),
            ({"max_resets": 4}, True),
            ({"recommended_lease_seconds": 30}, True),
            ({"client_versions": ("v1",)}, True),
            ({"client_versions": ("v2", "v3")}, False),  # same set, other order
            ({"status": "draining"}, False),
            ({"claim_order": "random"}, False),
            ({"max_jobs_per_claim": 256, "max_resets": 3}, False),  # explicit defaults
        ],
    )
    async def test_policy_version_bumps(self, store, clock, change, bumps):
        base = {"client_versions": ("v3", "v2")}
        await put(store, **base)
        kw = {**base, **change}
        status = kw.pop("status", "active")
        p = (await put(store, status=status, **kw)).project
        assert p.policy_version == (2 if bumps else 1)
        p = (await put(store, status=status, **kw)).project  # idempotent re-PUT
        assert p.policy_version == (2 if bumps else 1)

    async def test_list_projects_sorted_with_counts(self, store, clock):
        for pid in ("zeta", "alpha", "mid"):
            await put(store, pid)
        await store.enqueue("mid", ext_jobs("a", "b"))
        listed = await store.list_projects()
        assert [s.project.id for s in listed] == ["alpha", "mid", "zeta"]
        assert listed[1].job_counts.todo == 2 and listed[0].job_counts.todo == 0
        assert await store.get_project("nope") is None

    async def test_delete_project(self, store, clock):
        await worker_user(store)
        with pytest.raises(NotFound, match=r"^project not found$"):
            await store.delete_project("nope")
        await put(store, "p1")
        await put(store, "p2")
        await store.enqueue("p1", ext_jobs("a", "b"))
        await store.enqueue("p2", ext_jobs("a"))
        [a] = (await claim(store, "p1", max_jobs=1, lease=5)).jobs
        clock.advance(100)  # even an expired lease blocks deletion
        with pytest.raises(InvalidRequest, match=r"^project has WIP jobs$"):
            await store.delete_project("p1")
        await claim(store, "p1", types=("asset",))  # sweep
        await put(store, "p1", status="archived")
        await store.delete_project("p1")
        assert await store.get_project("p1") is None
        assert await store.get_job("p1", a.job_id) is None
        assert [s.project.id for s in await store.list_projects()] == ["p2"]
        assert (await counts(store, "p2"))["todo"] == 1
        s = await put(store, "p1")
        assert s.job_counts.as_dict() == ZERO and s.project.policy_version == 1
        assert await store.enqueue("p1", ext_jobs("a")) == 1


class JobAdminContract:
    async def test_list_jobs_paging(self, store, clock):
        await put(store)
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(5)]))
        ids = [j.job_id for j in await all_jobs(store)]
        page = await store.list_jobs("p1", None, 0, 2)
        assert [j.job_id for j in page.jobs] == ids[:2] and page.next_after_job_id == ids[1]
        page = await store.list_jobs("p1", None, ids[1], 2)
        assert [j.job_id for j in page.jobs] == ids[2:4] and page.next_after_job_id == ids[3]
        page = await store.list_jobs("p1", None, ids[3], 2)
        assert [j.job_id for j in page.jobs] == ids[4:] and page.next_after_job_id is None
        page = await store.list_jobs("p1", None, ids[2], 2)  # exactly `limit` left
        assert page.next_after_job_id is None
        page = await store.list_jobs("p1", None, ids[4], 2)
        assert page.jobs == [] and page.next_after_job_id is None
        with pytest.raises(NotFound, match=r"^project not found$"):
            await store.list_jobs("nope", None, 0, 10)

    async def test_list_jobs_status_filter(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(6)]))
        got = (await claim(store, max_jobs=3)).jobs
        await complete(store, "p1", done_item(got[0].job_id, got[0].attempt_id))
        await fail(store, "p1", fail_item(got[1].job_id, got[1].attempt_id, retryable=False))
        wip = await store.list_jobs("p1", JobStatus.WIP, 0, 10)
        assert [j.job_id for j in wip.jobs] == [got[2].job_id]
        todo = await store.list_jobs("p1", JobStatus.TODO, 0, 2)
        assert len(todo.jobs) == 2 and todo.next_after_job_id == todo.jobs[1].job_id
        assert all(j.status is JobStatus.TODO for j in todo.jobs)
        rest = await store.list_jobs("p1", JobStatus.TODO, todo.next_after_job_id, 2)
        assert len(rest.jobs) == 1 and rest.next_after_job_id is None
        assert (await store.list_jobs("p1", JobStatus.RESET_EXHAUSTED, 0, 10)).jobs == []

    async def test_get_job_is_scoped_to_project(self, store, clock):
        await put(store, "p1")
        await put(store, "p2")
        await store.enqueue("p1", ext_jobs("a"))
        [j] = await all_jobs(store)
        assert (await store.get_job("p1", j.job_id)).external_id == "a"
        assert await store.get_job("p2", j.job_id) is None
        assert await store.get_job("p1", j.job_id + 1000) is None

    async def test_reads_are_detached(self, store, clock):
        await put(store)
        await store.enqueue("p1", ext_jobs("a", attr={"k": 1}))
        [j] = await all_jobs(store)
        j.spec["attr"]["k"] = 2
        j.status = JobStatus.DONE
        again = await store.get_job("p1", j.job_id)
        assert again.spec == {"attr": {"k": 1}} and again.status is JobStatus.TODO

    async def test_requeue(self, store, clock):
        await worker_user(store)
        await put(store, max_resets=0)
        await store.enqueue("p1", ext_jobs("f", "x", "d", "w", "t"))
        f, x, d, w = (await claim(store, max_jobs=4)).jobs
        await fail(store, "p1", fail_item(f.job_id, f.attempt_id, retryable=False))
        await fail(store, "p1", fail_item(x.job_id, x.attempt_id, retryable=True))
        await complete(store, "p1", done_item(d.job_id, d.attempt_id))
        before = await store.get_job("p1", x.job_id)
        assert before.status is JobStatus.RESET_EXHAUSTED and before.reset_count == 1
        await put(store, status="archived", max_resets=0)  # project status is not checked
        clock.advance(7)
        for jid in (f.job_id, x.job_id):
            await store.requeue_job("p1", jid)
            j = await store.get_job("p1", jid)
            assert (j.status, j.reset_count, j.execution_error, j.outcome) == (JobStatus.TODO, 0, None, None)
            assert j.artifact_receipts == [] and j.completed_at is None
            assert j.created_at == before.created_at and j.updated_at == now_s(clock)
        assert (await store.get_job("p1", x.job_id)).random_key == before.random_key
        t = (await all_jobs(store))[4]
        for jid in (d.job_id, w.job_id, t.job_id, 999_999):
            with pytest.raises(InvalidRequest, match=r"^job is not failed or reset_exhausted$"):
                await store.requeue_job("p1", jid)
        assert (await store.get_job("p1", d.job_id)).outcome == OUTCOME.to_json()
        await put(store, max_resets=0)
        got = (await claim(store, max_jobs=10)).jobs
        assert [j.job_id for j in got] == [f.job_id, x.job_id, t.job_id]  # queue position kept

    async def test_requeue_wrong_project(self, store, clock):
        await worker_user(store)
        await put(store, "p1")
        await put(store, "p2")
        await store.enqueue("p1", ext_jobs("a"))
        [a] = (await claim(store)).jobs
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=False))
        with pytest.raises(InvalidRequest):
            await store.requeue_job("p2", a.job_id)

    async def test_delete_job(self, store, clock):
        await worker_user(store)
        await put(store, "p1")
        await put(store, "p2")
        await store.enqueue("p1", ext_jobs("wip", "done", "todo"))
        wip_id, done_id, todo_id = [j.job_id for j in await all_jobs(store)]
        assert (await claim(store, max_jobs=1, lease=5)).jobs[0].job_id == wip_id
        [d] = (await claim(store, max_jobs=1)).jobs
        await complete(store, "p1", done_item(d.job_id, d.attempt_id))
        clock.advance(10)
        for bad in (wip_id, 999_999):  # wip (even expired) or missing
            with pytest.raises(InvalidRequest, match=r"^job not found or is WIP$"):
                await store.delete_job("p1", bad)
        with pytest.raises(InvalidRequest):
            await store.delete_job("p2", done_id)  # another project's job
        await store.delete_job("p1", done_id)
        await store.delete_job("p1", todo_id)
        assert await store.get_job("p1", done_id) is None
        assert await counts(store) == {**ZERO, "wip": 1}
        with pytest.raises(InvalidRequest):
            await store.delete_job("p1", done_id)
