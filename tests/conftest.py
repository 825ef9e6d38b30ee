"""Shared fixtures for PostgreSQL-backed tests (see ``tests/support/databases.py``).

* ``pg_databases`` (session, sync): the :class:`TestDatabases` of the session's server; the
  server starts lazily, only when a test asks for a PostgreSQL fixture.
* ``pg_dsn`` (async, per test): DSN of a fresh, migrated database, dropped after the test.
* ``postgres_factory`` (session): a ``StoreFactory`` named "postgres" over one per-session
  database; each ``create(clock)`` empties it. Usable from any event loop.

Tests that use these should be marked ``postgres``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.databases import TestDatabases, start_server
from tests.support.postgres_factory import PostgresStoreFactory

_SESSION: list[TestDatabases] = []


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[TestDatabases]:
    server = start_server()
    dbs = TestDatabases(server)
    _SESSION.append(dbs)
    try:
        asyncio.run(dbs.setup())
        yield dbs
        if server.kind != "embedded":  # an embedded server's data directory is deleted anyway
            asyncio.run(dbs.teardown())
    finally:
        server.stop()


@pytest.fixture
async def pg_dsn(pg_databases: TestDatabases) -> AsyncIterator[str]:
    dsn = await pg_databases.create("t")
    yield dsn
    await pg_databases.drop(dsn)


@pytest.fixture(scope="session")
def postgres_factory(pg_databases: TestDatabases) -> PostgresStoreFactory:
    dsn = asyncio.run(pg_databases.create("factory"))
    return PostgresStoreFactory(dsn)


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """One line on how the PostgreSQL tests got their databases (and how fast)."""
    for dbs in _SESSION:
        times = dbs.create_seconds
        if times:
            terminalreporter.write_line(
                f"postgres ({dbs.server.kind}): {len(times)} databases from template, "
                f"mean {1000 * sum(times) / len(times):.1f} ms, max {1000 * max(times):.1f} ms"
            )
