"""A live tracker per module and backend: the memory store always, PostgreSQL when marked."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from hq_adapters.client import Config
from tests.integration.client.harness import Admin, LiveTracker

VERSION = "sdk-test/1"
_ids = itertools.count(1)


def _memory_tracker() -> LiveTracker:
    from hq_adapters.memory import MemoryStore
    from hq_domain.clock import SystemClock

    async def make():
        return MemoryStore(SystemClock())

    return LiveTracker(make)


def _postgres_tracker(request: pytest.FixtureRequest) -> LiveTracker:
    from hq_adapters.postgres import connect
    from hq_domain.clock import SystemClock

    databases = request.getfixturevalue("pg_databases")

    async def make():
        dsn = await databases.create("sdk")
        return await connect(dsn, SystemClock(), min_size=1, max_size=8)

    return LiveTracker(make)


@pytest.fixture(
    scope="module", params=["memory", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def live(request: pytest.FixtureRequest) -> Iterator[LiveTracker]:
    tracker = _memory_tracker() if request.param == "memory" else _postgres_tracker(request)
    tracker.start()
    yield tracker
    tracker.stop()


@pytest.fixture
def admin(live: LiveTracker) -> Iterator[Admin]:
    helper = Admin(live)
    yield helper
    helper.close()


@pytest.fixture
def config(live: LiveTracker) -> Config:
    return Config(live.url, live.token, VERSION, allow_http_tracker=True, request_timeout=10)


@pytest.fixture
def project(admin: Admin) -> str:
    """A fresh active project accepting ``VERSION``; tests adjust its policy as needed."""
    project_id = f"sdk-{next(_ids)}"
    admin.put_project(project_id, client_versions=[VERSION])
    return project_id
