"""A PostgreSQL store seeded for worker-path tests: an admin+worker user "u" with a machine
token, an active project "p" (identity mode none, client version "t") and queued jobs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from hq_adapters.postgres import PostgresStore, connect
from hq_domain.clock import SystemClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

TOKEN = "wk-token"


@contextlib.asynccontextmanager
async def seeded_store(pg_dsn: str, jobs: int, **pool: Any) -> AsyncIterator[PostgresStore]:
    """A store (``connect``'s pool options ``pool``) with user "u", ``TOKEN`` and project "p"
    of ``jobs`` queued jobs, closed afterwards."""
    store = await connect(pg_dsn, SystemClock(), min_size=1, **pool)
    try:
        await store.bootstrap_user("u", [Role.ADMIN, Role.WORKER], TOKEN)
        await store.put_project("p", ProjectPut(status="active", identity_mode="none", client_versions=("t",)))
        await store.enqueue("p", [JobSpec(value=f"https://e/{i}") for i in range(jobs)])
        yield store
    finally:
        await store.close()
