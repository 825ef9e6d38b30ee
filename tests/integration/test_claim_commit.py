"""A claim commits without waiting for its WAL flush; every other worker write waits
(migration 0021, ``tracker_claim_commit_mode``), unless the session sets
``hq.durable_claims = on``.

The store's statements run on a connection class that wraps each one the store sends outside a
transaction in a transaction of its own and reads ``synchronous_commit`` just before that
commits: the value the statement's commit ran with. That is what the claim functions change
(``set_config(…, is_local)`` lasts until the end of the transaction), so the probe sees it for
the store's own calls, joined calls and requests through the HTTP app alike.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from hq_adapters.postgres import PostgresStore
from hq_adapters.postgres.store import PLAN_CACHE_MODE
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.jobs import Outcome
from hq_domain.projects import ProjectPut
from hq_domain.worker import ClaimRequest, CompleteItem
from tests.support.seeded_store import TOKEN, seeded_store

pytestmark = pytest.mark.postgres

COMMITS: list[tuple[str, str]] = []
"""(the statement's first line of SQL, synchronous_commit at its commit), in order."""


def _first_sql_line(query: str) -> str:
    return next(ln for ln in query.splitlines() if ln.strip() and not ln.lstrip().startswith("--"))


class CommitProbe(asyncpg.Connection):
    """An asyncpg connection that records the commit mode of each statement run alone."""

    async def _probed(self, method: Any, query: str, *args: Any, **kw: Any) -> Any:
        if self.is_in_transaction():
            return await method(query, *args, **kw)
        async with self.transaction():
            result = await method(query, *args, **kw)
            mode = await super().fetchval("SELECT current_setting('synchronous_commit')")
        COMMITS.append((_first_sql_line(query), mode))
        return result

    async def fetchrow(self, query: str, *args: Any, **kw: Any) -> Any:
        return await self._probed(super().fetchrow, query, *args, **kw)

    async def fetch(self, query: str, *args: Any, **kw: Any) -> Any:
        return await self._probed(super().fetch, query, *args, **kw)


# Sessions start with synchronous_commit on whatever the server's default (the suite's own
# servers turn it off for speed, tests/support/databases.py), so that "off" can only come from
# the claim functions; the pool's plan mode is kept as connect() would set it.
SESSION = {"plan_cache_mode": PLAN_CACHE_MODE, "synchronous_commit": "on"}


@contextlib.asynccontextmanager
async def _seeded(
    pg_dsn: str, *, session: dict[str, str] = SESSION, **pool: Any
) -> AsyncIterator[PostgresStore]:
    async with seeded_store(
        pg_dsn, 20, connection_class=CommitProbe, server_settings=session, **pool
    ) as store:
        COMMITS.clear()
        yield store


def _modes(fragment: str) -> list[str]:
    return [mode for line, mode in COMMITS if fragment in line]


async def _claim_and_complete(store: PostgresStore, worker: str) -> None:
    _p, _q, claimed = await store.worker.gated_claim(
        TOKEN, "p", "t", ClaimRequest(worker, 2, 60, (), 1)
    )
    assert len(claimed.jobs) == 2
    _p, _q, results = await store.worker.gated_complete(TOKEN, "p", "t", worker, [
        CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in claimed.jobs
    ])  # fmt: skip
    assert [r.applied for r in results] == [True, True]


async def test_a_claim_commits_without_waiting_and_a_complete_waits(pg_dsn: str) -> None:
    async with _seeded(pg_dsn) as store:
        await _claim_and_complete(store, "w")
        assert _modes("tracker_gated_claim(") == ["off"]
        assert _modes("tracker_gated_complete(") == ["on"]
        # the one-statement claim without the gate (PostgresWorker.claim)
        claimed = await store.claim("u", "p", ClaimRequest("w2", 3, 60, (), 1))
        assert len(claimed.jobs) == 3
        assert _modes("tracker_claim_op_fifo(") == ["off"]


async def test_random_order_claims_commit_without_waiting_too(pg_dsn: str) -> None:
    async with _seeded(pg_dsn) as store:
        await store.put_project("p", ProjectPut(
            status="active", identity_mode="none", client_versions=("t",), claim_order="random"
        ))  # fmt: skip
        await store.claim("u", "p", ClaimRequest("w", 1, 60, (), 1))  # the order hint learns
        COMMITS.clear()
        claimed = await store.claim("u", "p", ClaimRequest("w", 2, 60, (), 1))
        assert len(claimed.jobs) == 2
        await _claim_and_complete(store, "w2")
        assert _modes("tracker_claim_op_random(") == ["off"]
        assert _modes("tracker_gated_claim(") == ["off"]


async def test_joined_claims_commit_without_waiting(pg_dsn: str) -> None:
    async with _seeded(pg_dsn, max_size=1) as store:
        async with store.database.connection():  # the only connection: the claims wait, join
            tasks = [asyncio.ensure_future(store.worker.gated_claim(
                TOKEN, "p", "t", ClaimRequest(f"w{i}", 1, 60, (), 1))) for i in range(3)]
            await asyncio.sleep(0.05)
        claims = await asyncio.gather(*tasks)
        assert [len(result.jobs) for _p, _q, result in claims] == [1, 1, 1]
        assert _modes("hq_slot") == ["off"]  # one joined statement


async def test_durable_claims_on_keeps_every_claim_waiting(pg_dsn: str) -> None:
    async with _seeded(pg_dsn, session={**SESSION, "hq.durable_claims": "on"}) as store:
        await _claim_and_complete(store, "w")
        await store.claim("u", "p", ClaimRequest("w2", 1, 60, (), 1))
        assert _modes("tracker_gated_claim(") == ["on"]
        assert _modes("tracker_claim_op_fifo(") == ["on"]
        assert _modes("tracker_gated_complete(") == ["on"]


async def test_through_the_http_app(pg_dsn: str) -> None:
    async with _seeded(pg_dsn) as store:
        app = create_app(Settings(sweep_interval_s=0, openapi=False), store)
        headers = {"Authorization": f"Bearer {TOKEN}", "X-SavewebHQ-Client-Version": "t"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t", headers=headers
        ) as client:
            body = {"worker_id": "h", "max_jobs": 2, "lease_seconds": 60, "policy_version": 1}
            claimed = await client.post("/api/v1/projects/p/jobs/claim", json=body)
            assert claimed.status_code == 200, claimed.text
            items = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"],
                      "outcome": {"kind": "success", "code": 200, "uri": None, "meta": None},
                      "artifact_receipts": None}
                     for j in claimed.json()["jobs"]]  # fmt: skip
            done = await client.post(
                "/api/v1/projects/p/jobs/complete", json={"worker_id": "h", "items": items}
            )
            assert done.status_code == 200, done.text
        assert _modes("tracker_gated_claim(") == ["off"]
        assert _modes("tracker_gated_complete(") == ["on"]
