"""The one-statement claim (``claim_op_*``: sweep and claim together) picks and writes exactly
what the transactional sweep-then-claim path does, including swept rows claimed in the same
call, the sweep bound, accept_types and retry exhaustion."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore
from hq_adapters.postgres import worker as pg_worker
from hq_domain.clock import ManualClock, seconds
from hq_domain.jobs import ExecutionError, JobSpec, Outcome
from hq_domain.projects import ClaimOrder, ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem

pytestmark = pytest.mark.postgres

_ROW = """
INSERT INTO tracker_jobs (project_id, value, random_key, spec, status, attempt_id, worker_id,
                          lease_expires_at, reset_count, created_at, updated_at)
VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, 1)
"""
_STATE = """
SELECT value, status, reset_count, attempt_id IS NOT NULL AS has_attempt, worker_id,
       lease_expires_at, updated_at
FROM tracker_jobs WHERE project_id = $1 ORDER BY value
"""


async def _fill(store: PostgresStore, project: str, now: int) -> None:
    """Todo rows and expired WIP rows interleaved in both queue orders, some exhausted, some
    of the other type; one live lease that must stay untouched."""
    rows = []
    for i in range(12):
        spec = '{"type":"asset"}' if i % 4 == 3 else "{}"
        key = (i * 7919) % 101 - 50
        if i % 3 == 0:  # expired lease, reset_count 0 or 1 (max_resets 1: 1 → exhausted)
            rows.append((f"v{i:02}", key, spec, "wip", f"at_{i}", "old", now - 100 + i, i % 2))
        else:
            rows.append((f"v{i:02}", key, spec, "todo", None, None, None, 0))
    rows.append(("v99", 0, "{}", "wip", "at_live", "old", now + 60, 0))
    for n, (value, key, spec, status, attempt, worker, lease, resets) in enumerate(rows):
        await store._pool.execute(
            _ROW, project, value, key, spec, status, attempt, worker, lease, resets, 10 + n
        )


@pytest.mark.parametrize("order", [ClaimOrder.FIFO, ClaimOrder.RANDOM])
@pytest.mark.parametrize(
    ("max_jobs", "accept", "sweep_limit"),
    [(3, (), 1000), (5, ("seed",), 1000), (4, (), 2), (256, ("asset",), 3), (1, ("seed",), 0)],
)
async def test_fast_claim_equals_sweep_then_claim(
    pg_dsn, order: ClaimOrder, max_jobs: int, accept: tuple[str, ...], sweep_limit: int
) -> None:
    clock = ManualClock()
    now = seconds(clock.now_ns())
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock, claim_sweep_limit=sweep_limit)
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        states, claimed = [], []
        for project, fast in (("fast", True), ("slow", False)):
            await store.put_project(
                project, ProjectPut(status="active", max_resets=1, claim_order=order.value)
            )
            await _fill(store, project, now)
            request = ClaimRequest("w", max_jobs, 30, accept, 1)
            if fast:
                store._claim_order_hint[project] = order
                result = await store.claim("u", project, request)
            else:
                result = await store._claim_tx("u", project, request)
            jobs = [(await store.get_job(project, j.job_id)).value for j in result.jobs]
            claimed.append((jobs, [j.lease_expires_at for j in result.jobs]))
            states.append([tuple(r) for r in await store._pool.fetch(_STATE, project)])
        assert claimed[0] == claimed[1]
        assert states[0] == states[1]
        assert claimed[0][0], "the case should claim something"
    finally:
        await store.close()


async def test_fast_claim_declines_what_it_does_not_cover(pg_dsn) -> None:
    """A dispatch-limited or audited project, or a stale order hint, goes the general way."""
    store = PostgresStore(await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2), ManualClock())
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        puts = {
            "limited": ProjectPut(status="active", dispatch_qps=1000.0),
            "audited": ProjectPut(status="active", worker_claim_qps=5.0),
            "random": ProjectPut(status="active", claim_order="random"),
        }
        for project, put in puts.items():
            await store.put_project(project, put)
            await _fill(store, project, seconds(store._clock.now_ns()))
            result = await store.claim("u", project, ClaimRequest("w", 2, 30, (), 1))
            assert result.jobs  # a fresh bucket holds at least one token
        assert store._claim_order_hint["random"] is ClaimOrder.RANDOM
        audit = await store._pool.fetchval(
            "SELECT claim_requests FROM tracker_worker_claim_buckets WHERE project_id = 'audited'"
        )
        assert audit == 1
    finally:
        await store.close()


@pytest.mark.parametrize("generic_max", [pg_worker.GENERIC_PLAN_MAX_ITEMS, 0])
@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_fast_mutations_equal_the_transactional_path(
    pg_dsn, op: str, generic_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """complete_op/fail_op/extend_op against the general path (complete_batch etc.), which runs
    when the one-statement form declines: same item results and the same rows, including a
    duplicate, a stale attempt, another worker's lease and an expired lease. Run through the
    generic-plan functions (the batch is small) and, with the threshold at 0, the plain
    statements."""
    monkeypatch.setattr(pg_worker, "GENERIC_PLAN_MAX_ITEMS", generic_max)
    clock = ManualClock()
    store = PostgresStore(await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2), clock)
    fast_fetchrow = store._fetchrow

    seen = []

    async def recording(name, *args):
        seen.append(name)
        return await fast_fetchrow(name, *args)

    async def declining(name, *args):
        if name.endswith(("_op", "_op_generic")):
            return {"ok": False}
        return await fast_fetchrow(name, *args)

    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        outcomes, states = [], []
        for project in ("fast", "slow"):
            await store.put_project(
                project, ProjectPut(status="active", identity_mode="none", max_resets=1)
            )
            await store.enqueue(project, [JobSpec(f"v{i}") for i in range(6)])
            mine = (await store.claim("u", project, ClaimRequest("w", 4, 30, (), 1))).jobs
            other = (await store.claim("u", project, ClaimRequest("x", 1, 30, (), 1))).jobs
            short = (await store.claim("u", project, ClaimRequest("w", 1, 1, (), 1))).jobs
            clock.advance(2)  # `short` has expired
            refs = [*mine, mine[0], other[0], short[0]]
            items = [AttemptRef(j.job_id, j.attempt_id) for j in refs]
            items.insert(1, AttemptRef(mine[1].job_id, "at_stale"))
            store._fetchrow = recording if project == "fast" else declining
            if op == "complete":
                out = await store.complete(
                    "u", project, "w",
                    [CompleteItem(i.job_id, i.attempt_id, Outcome("success"), None) for i in items],
                )
            elif op == "fail":
                out = await store.fail(
                    "u", project, "w",
                    [FailItem(i.job_id, i.attempt_id, n % 2 == 0, ExecutionError("e"))
                     for n, i in enumerate(items)],
                )
            else:
                out = await store.extend_lease("u", project, "w", 60, items)
            store._fetchrow = fast_fetchrow
            now = seconds(clock.now_ns())  # the clock moved on: compare times relative to now
            outcomes.append(
                [(r.applied, r.job_status, r.lease_expires_at and r.lease_expires_at - now)
                 for r in out]
            )
            states.append([
                (*r[:5], r["lease_expires_at"] and r["lease_expires_at"] - now,
                 r["updated_at"] - now)
                for r in await store._pool.fetch(_STATE, project)
            ])
        assert outcomes[0] == outcomes[1]
        assert states[0] == states[1]
        assert sum(a for a, _, _ in outcomes[0]) == 4
        assert seen == [f"{op}_op_generic" if generic_max else f"{op}_op"]
    finally:
        await store.close()


@pytest.mark.parametrize("max_jobs", [1, 64])  # the generic-plan function and the plain statement
async def test_unchanged_worker_mapping_is_not_locked(pg_dsn, max_jobs: int) -> None:
    """A worker's requests do not queue behind each other on its tracker_workers row: with the
    mapping unchanged, claim and complete neither write nor lock it (a transaction holding the
    row does not block them), while a changed mapping is still written (last writer wins)."""
    clock = ManualClock()
    store = PostgresStore(await asyncpg.create_pool(pg_dsn, min_size=1, max_size=3), clock)
    holder = await asyncpg.connect(pg_dsn)
    try:
        for user in ("u", "v"):
            await store.put_user(user, UserStatus.ACTIVE, [Role.WORKER])
        await store.put_project("p", ProjectPut(status="active", identity_mode="none"))
        await store.enqueue("p", [JobSpec(f"v{i}") for i in range(4)])
        await store.claim("u", "p", ClaimRequest("w", 1, 30, (), 1))  # maps w → u
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM tracker_workers WHERE worker_id = 'w' FOR UPDATE")
            got = await asyncio.wait_for(
                store.claim("u", "p", ClaimRequest("w", max_jobs, 30, (), 1)), 30
            )
            items = [CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None)
                     for j in got.jobs]
            done = await asyncio.wait_for(store.complete("u", "p", "w", items), 30)
            assert [r.applied for r in done] == [True] * len(items)
        await store.claim("v", "p", ClaimRequest("w", max_jobs, 30, (), 1))
        [m] = await store.list_worker_mappings("w", 5)
        assert m.user_id == "v"
    finally:
        await holder.close()
        await store.close()
