"""The contract suite on the in-memory adapter."""

from __future__ import annotations

import pytest

from hq_domain.clock import ManualClock
from tests.contract import (
    ClaimAuditContract,
    ClaimContract,
    DispatchContract,
    EnqueueContract,
    EnqueueFieldsContract,
    ExpiryContract,
    JobAdminContract,
    MonitorContract,
    MutationContract,
    ObserveContract,
    ProjectAdminContract,
    UsersContract,
    WebStoreContract,
)
from tests.support.memory_factory import MemoryStoreFactory


class MemoryFixtures:
    factory = MemoryStoreFactory()

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    async def store(self, clock):
        store = await self.factory.create(clock)
        yield store
        await self.factory.dispose(store)

    @pytest.fixture
    def claim_buckets(self, store):
        return lambda project_id: self.factory.claim_buckets(store, project_id)


class TestClaimMemory(MemoryFixtures, ClaimContract): ...


class TestMutationMemory(MemoryFixtures, MutationContract): ...


class TestExpiryMemory(MemoryFixtures, ExpiryContract): ...


class TestDispatchMemory(MemoryFixtures, DispatchContract): ...


class TestClaimAuditMemory(MemoryFixtures, ClaimAuditContract): ...


class TestEnqueueMemory(MemoryFixtures, EnqueueContract): ...
class TestEnqueueFieldsMemory(MemoryFixtures, EnqueueFieldsContract): ...


class TestProjectAdminMemory(MemoryFixtures, ProjectAdminContract): ...


class TestJobAdminMemory(MemoryFixtures, JobAdminContract): ...


class TestUsersMemory(MemoryFixtures, UsersContract): ...


class TestWebStoreMemory(MemoryFixtures, WebStoreContract): ...


class TestObserveMemory(MemoryFixtures, ObserveContract): ...


class TestMonitorMemory(MemoryFixtures, MonitorContract): ...


class TestMemoryIndexes:
    """The memory adapter's lazy heaps stay correct and bounded over many cycles."""

    async def test_requeue_cycles_keep_order_and_compact(self, store, clock):
        from hq_domain.jobs import ExecutionError, JobSpec
        from hq_domain.projects import ProjectPut
        from hq_domain.users import Role, UserStatus
        from hq_domain.worker import ClaimRequest, FailItem

        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        await store.put_project("p", ProjectPut(status="active", identity_mode="none"))
        await store.enqueue("p", [JobSpec(f"v{i}", random_key=10 - i) for i in range(3)])
        req = ClaimRequest("w", 1, 60, (), 1)
        for _ in range(400):
            [c] = (await store.claim("u", "p", req)).jobs
            await store.fail("u", "p", "w", [FailItem(c.job_id, c.attempt_id, False, ExecutionError("e"))])
            await store.requeue_job("p", c.job_id)
        queues = store.state.project_jobs["p"].todo
        assert queues.size <= 4 * 3 + 256 + 2  # compacted at least once
        await store.put_project("p", ProjectPut(status="active", claim_order="random"))
        got = (await store.claim("u", "p", ClaimRequest("w", 3, 60, (), 1))).jobs
        assert [j.value for j in got] == ["v2", "v1", "v0"]
        clock.advance(60)
        assert await store.sweep_expired(2) == 2
        assert await store.sweep_expired(2) == 1
