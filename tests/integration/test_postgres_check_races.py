"""A user or project that changes between the one-statement complete/fail/extend and the
re-read of its checks (a real interleaving on a real PostgreSQL).

The statement checks the user and project itself and writes nothing when a check fails; the
adapter then re-reads them and raises the spec's error (§1.6 order) for what it reads. If the
re-read passes, the user or project changed in between, and the statement runs again with
the new state. The interleaving is produced through the worker's public seam: its
:class:`Database`, here one that runs an admin change right after the statement returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.worker import GENERIC_PLAN_MAX_ITEMS, PostgresWorker
from hq_domain.clock import ManualClock
from hq_domain.errors import NotFound, PermissionDenied, ProjectNotActive
from hq_domain.jobs import ExecutionError, JobSpec, JobStatus, Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem

pytestmark = pytest.mark.postgres

Change = Callable[[], Awaitable[Any]]
_OPS = ("complete_op", "fail_op", "extend_op", "complete_one", "fail_one", "extend_one")


class Interleaved:
    """The store's Database, running admin changes right before or right after the n-th
    one-statement complete/fail/extend (n from 1): ``script[n, "before"]``,
    ``script[n, "after"]``. Everything else is the store's Database itself (its gate and the
    connections it keeps, which the store's ``close()`` releases)."""

    def __init__(self, base: Database, script: dict[tuple[int, str], Change]) -> None:
        self._base = base
        self.script = script
        self.statements = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        if name.removesuffix("_generic") not in _OPS:
            return await self._base.fetchrow(name, *args)
        self.statements += 1
        if (before := self.script.pop((self.statements, "before"), None)) is not None:
            await before()
        row = await self._base.fetchrow(name, *args)
        if (after := self.script.pop((self.statements, "after"), None)) is not None:
            await after()
        return row


@pytest.fixture
async def world(pg_dsn):
    clock = ManualClock()
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock)
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    await store.put_project("p", ProjectPut(status="active", identity_mode="none"))
    await store.enqueue("p", [JobSpec("v")])
    [job] = (await store.claim("u", "p", ClaimRequest("w", 1, 30, (), 1))).jobs
    yield store, clock, job
    await store.close()


def _call(worker: PostgresWorker, op: str, job) -> Awaitable[Any]:
    if op == "complete":
        item = CompleteItem(job.job_id, job.attempt_id, Outcome("success"), None)
        return worker.complete("u", "p", "w", [item])
    if op == "fail":
        item = FailItem(job.job_id, job.attempt_id, False, ExecutionError("e"))
        return worker.fail("u", "p", "w", [item])
    return worker.extend_lease("u", "p", "w", 60, [AttemptRef(job.job_id, job.attempt_id)])


def _worker(
    store: PostgresStore, script: dict[tuple[int, str], Change],
    generic: bool = True,
) -> tuple[Interleaved, PostgresWorker]:
    db = Interleaved(store.database, script)
    limit = GENERIC_PLAN_MAX_ITEMS if generic else 0
    return db, PostgresWorker(cast(Database, db), generic_plan_max_items=limit)


WANT = {"complete": JobStatus.DONE, "fail": JobStatus.FAILED, "extend": JobStatus.WIP}


@pytest.mark.parametrize("generic", [True, False])
@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_a_user_enabled_after_the_statement_gets_the_operation(world, op, generic) -> None:
    """Suspended when the statement read it, active again at the re-read: the statement runs
    again and the operation applies, as if the request had come a moment later."""
    store, _, job = world
    await store.put_user("u", UserStatus.SUSPENDED, [Role.WORKER])
    db, worker = _worker(
        store, {(1, "after"): lambda: store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])},
        generic,
    )
    [result] = await _call(worker, op, job)
    assert (result.applied, result.job_status) == (True, WANT[op])
    assert (await store.get_job("p", job.job_id)).status is WANT[op]
    assert db.statements == 2 and not db.script


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda s: s.put_project("p", ProjectPut(status="archived", identity_mode="none")),
         ProjectNotActive),
        (lambda s: s.delete_user("u"), PermissionDenied),
    ],
)
@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_the_error_is_the_one_the_re_read_finds(world, op, change, error) -> None:
    """Suspended when the statement read it; at the re-read the user is active again but the
    project is archived (or the user is gone): the error is the re-read's, nothing changes."""
    store, _, job = world
    await store.put_user("u", UserStatus.SUSPENDED, [Role.WORKER])

    async def enable_then_change() -> None:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        await change(store)

    db, worker = _worker(store, {(1, "after"): enable_then_change})
    with pytest.raises(error):
        await _call(worker, op, job)
    assert db.statements == 1 and not db.script
    async with store.database.connection() as conn:
        row = await conn.fetchrow(
            "SELECT status, attempt_id FROM tracker_jobs WHERE job_id = $1", job.job_id
        )
    assert tuple(row) == ("wip", job.attempt_id)


@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_errors_without_a_race_follow_the_gate_order(world, op) -> None:
    """No change in between: the re-read raises what the statement saw (§1.6 order: the user
    before the project), and the statement runs once."""
    store, _, job = world
    db, worker = _worker(store, {})
    await store.put_project("p", ProjectPut(status="archived", identity_mode="none"))
    await store.put_user("u", UserStatus.SUSPENDED, [Role.WORKER])
    with pytest.raises(PermissionDenied, match=r"^active worker role required$"):
        await _call(worker, op, job)
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    with pytest.raises(ProjectNotActive):
        await _call(worker, op, job)
    async with store.database.connection() as conn:
        await conn.execute("DELETE FROM tracker_jobs")
    await store.delete_project("p")
    with pytest.raises(NotFound, match=r"^project not found$"):
        await _call(worker, op, job)
    assert db.statements == 3


async def test_a_user_that_keeps_changing_is_an_internal_error(world) -> None:
    """Declined, passing at the re-read, declined again, passing again: the adapter stops
    after one re-run instead of looping (the API answers 500 internal_error)."""
    store, _, job = world

    def to(status: UserStatus) -> Change:
        return lambda: store.put_user("u", status, [Role.WORKER])

    await store.put_user("u", UserStatus.SUSPENDED, [Role.WORKER])
    script = {
        (1, "after"): to(UserStatus.ACTIVE),
        (2, "before"): to(UserStatus.SUSPENDED),
        (2, "after"): to(UserStatus.ACTIVE),
    }
    db, worker = _worker(store, script)
    with pytest.raises(RuntimeError, match="changed"):
        await _call(worker, "complete", job)
    assert db.statements == 2 and not db.script
    assert (await store.get_job("p", job.job_id)).status is JobStatus.WIP
