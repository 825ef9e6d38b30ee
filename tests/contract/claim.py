"""Claim (spec §2.4 without the dispatch bucket, which DispatchContract covers), D1 gates,
policy reads and worker mappings."""

from __future__ import annotations

import asyncio

import pytest

from hq_domain.errors import NotFound, PermissionDenied, ProjectNotActive
from hq_domain.jobs import JobStatus
from hq_domain.users import Role, UserStatus
from hq_domain.worker import gate_passes
from tests.contract.helpers import (
    WORKER,
    WORKER_USER,
    claim,
    claim_req,
    complete,
    counts,
    done_item,
    ext_jobs,
    fail,
    fail_item,
    job,
    now_s,
    put,
    ref,
    worker_user,
)


class ClaimContract:
    async def test_claim_hands_out_attempts(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", [job("https://a/", id="a", type="asset", via="", hops=2, attr={"x": 1})])
        clock.advance(5)
        result = await claim(store, lease=30, policy_version=7)
        assert result.project_id == "p1"
        assert result.retry_after_ms == 1000
        assert result.policy_version == 1  # the current one, not the client-reported one
        [c] = result.jobs
        assert c.value == "https://a/" and c.external_id == "a"
        assert c.spec == {"type": "asset", "via": "", "hops": 2, "attr": {"x": 1}}
        assert c.lease_expires_at == now_s(clock) + 30
        assert c.attempt_id.startswith("at_") and len(c.attempt_id) == 27
        stored = await store.get_job("p1", c.job_id)
        assert stored.status is JobStatus.WIP
        assert (stored.attempt_id, stored.worker_id, stored.lease_expires_at) == (
            c.attempt_id, WORKER, c.lease_expires_at,
        )
        assert stored.updated_at == now_s(clock)
        assert await counts(store) == {"todo": 0, "wip": 1, "done": 0, "failed": 0, "reset_exhausted": 0}

    async def test_each_claim_is_a_fresh_attempt(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", ext_jobs("a"))
        first = (await claim(store, lease=5)).jobs[0]
        clock.advance(5)
        second = (await claim(store, lease=5)).jobs[0]
        assert second.job_id == first.job_id and second.attempt_id != first.attempt_id

    async def test_empty_queue(self, store, clock):
        await worker_user(store)
        await put(store)
        result = await claim(store)
        assert result.jobs == [] and result.retry_after_ms == 1000 and result.policy_version == 1

    async def test_unknown_project(self, store, clock):
        await worker_user(store)
        with pytest.raises(NotFound, match=r"^project not found$"):
            await claim(store, "nope")

    @pytest.mark.parametrize(
        ("status", "roles"),
        [
            (UserStatus.PENDING, [Role.WORKER]),
            (UserStatus.SUSPENDED, [Role.WORKER]),
            (UserStatus.ACTIVE, [Role.ADMIN]),
            (UserStatus.ACTIVE, []),
        ],
    )
    async def test_requires_active_worker(self, store, clock, status, roles):
        await put(store)
        await store.enqueue("p1", ext_jobs("a"))
        await store.put_user("u", status, roles)
        with pytest.raises(PermissionDenied, match=r"^active worker role required$"):
            await claim(store, user="u")
        with pytest.raises(PermissionDenied):
            await claim(store, user="missing-user")
        with pytest.raises(PermissionDenied):
            await store.policy("u", "p1")
        assert (await counts(store))["todo"] == 1

    @pytest.mark.parametrize("status", ["draining", "archived"])
    async def test_claim_refused_unless_active(self, store, clock, status):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", ext_jobs("a"))
        await put(store, status=status)
        with pytest.raises(ProjectNotActive, match=r"^project is not active$"):
            await claim(store)

    async def test_policy_gates(self, store, clock):
        await worker_user(store)
        await put(store, "act", max_jobs_per_claim=7)
        await put(store, "dra", status="draining")
        await put(store, "arc", status="archived")
        assert (await store.policy(WORKER_USER, "act")).max_jobs_per_claim == 7
        assert (await store.policy(WORKER_USER, "dra")).id == "dra"  # D1: draining reads policy
        with pytest.raises(ProjectNotActive):
            await store.policy(WORKER_USER, "arc")
        with pytest.raises(NotFound):
            await store.policy(WORKER_USER, "nope")
        # the gate read ignores status
        assert (await store.gate_project("arc")).id == "arc"
        assert await store.gate_project("nope") is None
        # policy does not record a worker mapping
        assert await store.list_worker_mappings(None, 10) == []

    async def test_max_jobs_clamped_by_project(self, store, clock):
        await worker_user(store)
        await put(store, max_jobs_per_claim=2)
        await store.enqueue("p1", ext_jobs("a", "b", "c", "d"))
        assert len((await claim(store, max_jobs=5)).jobs) == 2
        assert len((await claim(store, max_jobs=1)).jobs) == 1
        assert len((await claim(store, max_jobs=256)).jobs) == 1

    async def test_fifo_order_and_position_kept_after_reset(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", ext_jobs("c", "a"))
        clock.advance(1)
        await store.enqueue("p1", ext_jobs("b"))
        got = (await claim(store, max_jobs=1)).jobs
        assert [j.external_id for j in got] == ["c"]
        await fail(store, "p1", fail_item(got[0].job_id, got[0].attempt_id, retryable=True))
        got = (await claim(store, max_jobs=3)).jobs
        assert [j.external_id for j in got] == ["c", "a", "b"]

    async def test_random_order_by_key_then_job_id(self, store, clock):
        await worker_user(store)
        await put(store, claim_order="random")
        await store.enqueue("p1", ext_jobs("k5", random_key=5))
        await store.enqueue("p1", ext_jobs("kmin", random_key=-(2**31)))
        await store.enqueue("p1", ext_jobs("k0a", random_key=0))
        await store.enqueue("p1", ext_jobs("k0b", random_key=0))
        await store.enqueue("p1", ext_jobs("kmax", random_key=2**31 - 1))
        got = (await claim(store, max_jobs=256)).jobs
        assert [j.external_id for j in got] == ["kmin", "k0a", "k0b", "k5", "kmax"]

    async def test_switching_claim_order_takes_effect_on_next_claim(self, store, clock):
        await worker_user(store)
        await put(store, claim_order="random")
        await store.enqueue("p1", [job("first", id="first", random_key=9), job("second", id="second", random_key=1)])
        got = (await claim(store, max_jobs=1)).jobs
        assert got[0].external_id == "second"
        await put(store, claim_order="fifo")
        await store.enqueue("p1", [job("third", id="third", random_key=-5)])
        got = (await claim(store, max_jobs=1)).jobs
        assert got[0].external_id == "first"
        await put(store, claim_order="random")
        got = (await claim(store, max_jobs=1)).jobs
        assert got[0].external_id == "third"
        # WIP rows are unaffected by the switch
        assert (await store.get_job("p1", got[0].job_id)).status is JobStatus.WIP

    async def test_a_switch_to_random_takes_in_every_job_that_can_return_to_todo(self, store, clock):
        """Jobs enqueued under FIFO, in every state from which they can become todo again (a
        WIP job failed retryably after the switch, a failed job requeued, an expired lease, a
        job never claimed), are claimed in random-key order after a switch to random."""
        await worker_user(store)
        await put(store, claim_order="fifo")
        await store.enqueue("p1", [job("a", id="a", random_key=9), job("b", id="b", random_key=5),
                                   job("c", id="c", random_key=1), job("d", id="d", random_key=7),
                                   job("e", id="e", random_key=3)])  # fmt: skip
        a, b, c, d = (await claim(store, max_jobs=4, lease=30)).jobs
        assert [j.external_id for j in (a, b, c, d)] == ["a", "b", "c", "d"]
        await fail(store, "p1", fail_item(a.job_id, a.attempt_id, retryable=False))
        await complete(store, "p1", done_item(d.job_id, d.attempt_id))
        await put(store, claim_order="random")
        await fail(store, "p1", fail_item(b.job_id, b.attempt_id, retryable=True))
        await store.requeue_job("p1", a.job_id)
        clock.advance(31)  # c's lease expires; the next claim sweeps it back
        got = (await claim(store, max_jobs=256)).jobs
        assert [j.external_id for j in got] == ["c", "e", "b", "a"]

    async def test_omitted_claim_order_is_kept(self, store, clock):
        await worker_user(store)
        await put(store, claim_order="random")
        await put(store)  # claim_order omitted → kept
        await store.enqueue("p1", [job("a", id="a", random_key=9), job("b", id="b", random_key=1)])
        assert (await claim(store, max_jobs=1)).jobs[0].external_id == "b"

    async def test_accept_types(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue(
            "p1",
            [job("none", id="none"), job("seed", id="seed", type="seed"), job("asset", id="asset", type="asset")],
        )
        got = (await claim(store, types=("asset",))).jobs
        assert [j.external_id for j in got] == ["asset"]
        assert (await claim(store, types=("asset",))).jobs == []
        got = (await claim(store, types=("seed",), max_jobs=1)).jobs
        assert [j.external_id for j in got] == ["none"]  # absent type counts as seed
        got = (await claim(store, types=("seed", "asset"))).jobs
        assert [j.external_id for j in got] == ["seed"]

    async def test_claim_spans_only_its_project(self, store, clock):
        await worker_user(store)
        await put(store, "p1")
        await put(store, "p2")
        await store.enqueue("p2", ext_jobs("a"))
        assert (await claim(store, "p1")).jobs == []
        assert len((await claim(store, "p2")).jobs) == 1

    async def test_worker_mapping_upserted_by_claim_last_writer_wins(self, store, clock):
        await worker_user(store, "u1")
        await worker_user(store, "u2")
        await put(store)
        await claim(store, user="u1", worker="wa")
        await claim(store, user="u1", worker="wb")
        maps = await store.list_worker_mappings(None, 10)
        assert [(m.worker_id, m.user_id) for m in maps] == [("wa", "u1"), ("wb", "u1")]
        await claim(store, user="u2", worker="wa")
        [m] = await store.list_worker_mappings("wa", 10)
        assert m.user_id == "u2"
        assert await store.list_worker_mappings("zz", 10) == []
        assert len(await store.list_worker_mappings(None, 1)) == 1

    async def test_concurrent_claims_never_share_a_job(self, store, clock):
        await worker_user(store)
        await put(store)
        await store.enqueue("p1", ext_jobs(*[f"j{i}" for i in range(10)]))
        results = await asyncio.gather(*(claim(store, max_jobs=2, worker=f"w{i}") for i in range(8)))
        ids = [j.job_id for r in results for j in r.jobs]
        assert len(ids) == len(set(ids)) == 10
        for r in results:
            for j in r.jobs:
                assert (await store.get_job("p1", j.job_id)).attempt_id == j.attempt_id

    @pytest.mark.parametrize("max_jobs", [1, 64])  # PostgreSQL: one round trip / two
    async def test_gated_calls_run_only_when_the_gate_passes(self, store, clock, max_jobs):
        """gated_* = worker_gate, then the operation exactly when gate_passes: every gate
        failure (unknown/revoked token, non-ID project, missing project, inactive or non-worker
        user, version not allowed) returns no result, what worker_gate reads, and writes
        nothing; a passing gate returns the result and no project."""
        await worker_user(store)
        await store.set_machine_token(WORKER_USER, "tok-w")
        await store.put_user("adm", UserStatus.ACTIVE, [Role.ADMIN])
        await store.set_machine_token("adm", "tok-a")
        await put(store, client_versions=("v1", "v 2"))
        await store.enqueue("p1", ext_jobs("a", "b"))
        req = claim_req(max_jobs=max_jobs)
        for token, project, version in [
            ("nope", "p1", "v1"), ("tok-w", "p 1", "v1"), ("tok-w", "p\x00", "v1"),
            ("tok-w", "p2", "v1"), ("tok-a", "p1", "v1"), ("tok-w", "p1", "v"),
            ("tok-w", "p1", ""), ("tok-w", "p1", "v1\x00"), ("tok-w", "p1", "V1"),
        ]:
            principal, found, result = await store.gated_claim(token, project, version, req)
            assert result is None, (token, project, version)
            assert (principal, found) == await store.worker_gate(token, project)
            assert not gate_passes(principal, found, project, version)
        assert (await counts(store))["todo"] == 2
        principal, found, result = await store.gated_claim("tok-w", "p1", "v 2", req)
        assert principal.user_id == WORKER_USER and found is None  # nothing to raise from
        assert len(result.jobs) == min(2, max_jobs)
        refs = [ref(j.job_id, j.attempt_id) for j in result.jobs]
        for op in ("extend", "fail", "complete"):
            for token, version in [("nope", "v1"), ("tok-a", "v1"), ("tok-w", "v3")]:
                assert (await self._gated(store, op, token, version, refs))[2] is None
        _, found, [extended] = await self._gated(store, "extend", "tok-w", "v1", refs[:1])
        assert found is None and extended.applied and extended.lease_expires_at == now_s(clock) + 30
        _, found, [failed] = await self._gated(store, "fail", "tok-w", "v1", refs[:1])
        assert found is None and failed.applied and failed.job_status is JobStatus.TODO
        if len(refs) > 1:
            _, found, [done] = await self._gated(store, "complete", "tok-w", "v1", refs[1:])
            assert found is None and done.applied and done.job_status is JobStatus.DONE
        await store.revoke_machine_token(WORKER_USER)
        assert (await store.gated_claim("tok-w", "p1", "v1", req))[2] is None
        await store.put_user(WORKER_USER, UserStatus.SUSPENDED, [Role.WORKER])
        await store.set_machine_token(WORKER_USER, "tok-w2")
        assert (await store.gated_claim("tok-w2", "p1", "v1", req))[2] is None
        # past the gate, the operation's own errors are raised (here: 409 for an archived project)
        await store.put_user(WORKER_USER, UserStatus.ACTIVE, [Role.WORKER])
        await put(store, status="archived", client_versions=("v1",))
        with pytest.raises(ProjectNotActive):
            await store.gated_claim("tok-w2", "p1", "v1", req)

    @staticmethod
    async def _gated(store, op, token, version, refs):
        if op == "extend":
            return await store.gated_extend_lease(token, "p1", version, WORKER, 30, refs)
        if op == "fail":
            items = [fail_item(r.job_id, r.attempt_id) for r in refs]
            return await store.gated_fail(token, "p1", version, WORKER, items)
        items = [done_item(r.job_id, r.attempt_id) for r in refs]
        return await store.gated_complete(token, "p1", version, WORKER, items)

    async def test_worker_gate_reads_token_owner_and_project(self, store, clock):
        await store.put_user("g1", UserStatus.SUSPENDED, [Role.ADMIN])
        await store.set_machine_token("g1", "tok-g1")
        await put(store, "arc", status="archived")
        principal, project = await store.worker_gate("tok-g1", "arc")
        assert principal.user_id == "g1" and principal.status is UserStatus.SUSPENDED
        assert principal.roles == frozenset({Role.ADMIN})
        assert project == await store.gate_project("arc")  # any status, like gate_project
        assert await store.worker_gate("tok-g1", "nope") == (principal, None)
        assert await store.worker_gate("wrong", "arc") == (None, project)
        assert await store.worker_gate("x" * 2000, "arc") == (None, project)
        # only IDs are looked up (a NUL would not even reach a PostgreSQL text parameter)
        assert await store.worker_gate("tok-g1", "a\x00b") == (principal, None)
        await store.revoke_machine_token("g1")
        assert await store.worker_gate("tok-g1", "arc") == (None, project)
