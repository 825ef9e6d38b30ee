"""The store contract (tests/contract) run against PostgresStore on a real PostgreSQL.

Each test gets a store over the session's factory database, emptied by TRUNCATE (cheaper than
a database per test); the clock is a ManualClock the store reads.
"""

from __future__ import annotations

import pytest

from hq_domain.clock import ManualClock
from tests.contract import (
    ALL_CONTRACTS,
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

pytestmark = pytest.mark.postgres


class PostgresFixtures:
    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    async def store(self, postgres_factory, clock):
        store = await postgres_factory.create(clock)
        yield store
        await postgres_factory.dispose(store)

    @pytest.fixture
    def claim_buckets(self, postgres_factory, store):
        return lambda project_id: postgres_factory.claim_buckets(store, project_id)


class TestClaimPostgres(PostgresFixtures, ClaimContract): ...


class TestMutationPostgres(PostgresFixtures, MutationContract): ...


class TestExpiryPostgres(PostgresFixtures, ExpiryContract): ...


class TestDispatchPostgres(PostgresFixtures, DispatchContract): ...


class TestClaimAuditPostgres(PostgresFixtures, ClaimAuditContract): ...


class TestEnqueuePostgres(PostgresFixtures, EnqueueContract): ...
class TestEnqueueFieldsPostgres(PostgresFixtures, EnqueueFieldsContract): ...


class TestProjectAdminPostgres(PostgresFixtures, ProjectAdminContract): ...


class TestJobAdminPostgres(PostgresFixtures, JobAdminContract): ...


class TestUsersPostgres(PostgresFixtures, UsersContract): ...


class TestWebStorePostgres(PostgresFixtures, WebStoreContract): ...


class TestObservePostgres(PostgresFixtures, ObserveContract): ...


class TestMonitorPostgres(PostgresFixtures, MonitorContract): ...


def test_every_contract_is_run() -> None:
    here = {base for cls in list(globals().values()) if isinstance(cls, type) for base in cls.__mro__}
    assert set(ALL_CONTRACTS) <= here
