"""The one-statement claim (``claim_op_*``: sweep and claim together) picks and writes exactly
what the transactional sweep-then-claim path does, including swept rows claimed in the same
call, the sweep bound, accept_types and retry exhaustion; the one-statement complete, fail and
extend (``*_op``) match, reject and write what the spec says, through the generic-plan
functions and the plain statements alike."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore
from hq_adapters.postgres.worker import GENERIC_PLAN_MAX_ITEMS, PostgresWorker
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


async def _fill(pool: asyncpg.Pool, project: str, now: int) -> None:
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
        await pool.execute(
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
    store = PostgresStore(pool, clock)
    # the fast statement of the project's order first (no learnt hint needed)
    worker = PostgresWorker(
        store.database, claim_sweep_limit=sweep_limit, claim_orders={"fast": order}
    )
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        states, claimed = [], []
        for project, fast in (("fast", True), ("slow", False)):
            await store.put_project(
                project, ProjectPut(status="active", max_resets=1, claim_order=order.value)
            )
            await _fill(pool, project, now)
            request = ClaimRequest("w", max_jobs, 30, accept, 1)
            if fast:
                result = await worker.claim("u", project, request)
                assert worker.claim_orders == {"fast": order}  # not learnt: it stayed fast
            else:
                result = await worker.claim_in_steps("u", project, request)
            jobs = [(await store.get_job(project, j.job_id)).value for j in result.jobs]
            claimed.append((jobs, [j.lease_expires_at for j in result.jobs]))
            states.append([tuple(r) for r in await pool.fetch(_STATE, project)])
        assert claimed[0] == claimed[1]
        assert states[0] == states[1]
        assert claimed[0][0], "the case should claim something"
    finally:
        await store.close()


async def test_fast_claim_declines_what_it_does_not_cover(pg_dsn) -> None:
    """A dispatch-limited or audited project, or a stale order hint, goes the general way."""
    clock = ManualClock()
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock)
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        puts = {
            "limited": ProjectPut(status="active", dispatch_qps=1000.0),
            "audited": ProjectPut(status="active", worker_claim_qps=5.0),
            "random": ProjectPut(status="active", claim_order="random"),
        }
        for project, put in puts.items():
            await store.put_project(project, put)
            await _fill(pool, project, seconds(clock.now_ns()))
            result = await store.claim("u", project, ClaimRequest("w", 2, 30, (), 1))
            assert result.jobs  # a fresh bucket holds at least one token
        assert store.worker.claim_orders["random"] is ClaimOrder.RANDOM
        audit = await pool.fetchval(
            "SELECT claim_requests FROM tracker_worker_claim_buckets WHERE project_id = 'audited'"
        )
        assert audit == 1
    finally:
        await store.close()


@pytest.mark.parametrize("generic_max", [GENERIC_PLAN_MAX_ITEMS, 0])
@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_fast_mutations_match_first_live_attempts_only(
    pg_dsn, op: str, generic_max: int
) -> None:
    """complete_op/fail_op/extend_op on a batch with a duplicate, a stale attempt, another
    worker's lease and an expired lease: exactly the first occurrence of each live attempt of
    this worker applies, in input order, and only those rows change. Run through the
    generic-plan functions (the batch is small) and, with the threshold at 0, the plain
    statements."""
    clock = ManualClock()
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock)
    worker = PostgresWorker(store.database, generic_plan_max_items=generic_max)
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        await store.put_project(
            "p", ProjectPut(status="active", identity_mode="none", max_resets=1)
        )
        await store.enqueue("p", [JobSpec(f"v{i}") for i in range(6)])
        mine = (await store.claim("u", "p", ClaimRequest("w", 4, 30, (), 1))).jobs
        other = (await store.claim("u", "p", ClaimRequest("x", 1, 30, (), 1))).jobs
        short = (await store.claim("u", "p", ClaimRequest("w", 1, 1, (), 1))).jobs
        clock.advance(2)  # `short` has expired
        refs = [*mine, mine[0], other[0], short[0]]
        items = [AttemptRef(j.job_id, j.attempt_id) for j in refs]
        items.insert(1, AttemptRef(mine[1].job_id, "at_stale"))
        before = {r["value"]: tuple(r) for r in await pool.fetch(_STATE, "p")}
        now = seconds(clock.now_ns())
        if op == "complete":
            out = await worker.complete(
                "u",
                "p",
                "w",
                [CompleteItem(i.job_id, i.attempt_id, Outcome("success"), None) for i in items],
            )
            applied = ["done"] * 4
        elif op == "fail":  # retryable at even input positions: todo (1 reset ≤ 1), else failed
            out = await worker.fail(
                "u",
                "p",
                "w",
                [
                    FailItem(i.job_id, i.attempt_id, n % 2 == 0, ExecutionError("e"))
                    for n, i in enumerate(items)
                ],
            )
            applied = ["todo", "todo", "failed", "todo"]  # mine0..3 at positions 0, 2, 3, 4
        else:
            out = await worker.extend_lease("u", "p", "w", 60, items)
            applied = ["wip"] * 4
        # input: mine0, stale, mine1, mine2, mine3, mine0 again, other's, expired
        want = [applied[0], None, *applied[1:], None, None, None]
        assert [r.job_status for r in out] == want
        assert [r.applied for r in out] == [s is not None for s in want]
        assert [r.lease_expires_at for r in out] == (
            [now + 60 if s else None for s in want] if op == "extend" else [None] * len(want)
        )
        after = {r["value"]: tuple(r) for r in await pool.fetch(_STATE, "p")}
        changed = {v for v in after if after[v] != before[v]}
        assert changed == {(await store.get_job("p", j.job_id)).value for j in mine}
        for job in mine:
            row = await store.get_job("p", job.job_id)
            assert row.updated_at == now
            assert (row.attempt_id is None) == (op != "extend")
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
            items = [
                CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in got.jobs
            ]
            done = await asyncio.wait_for(store.complete("u", "p", "w", items), 30)
            assert [r.applied for r in done] == [True] * len(items)
        await store.claim("v", "p", ClaimRequest("w", max_jobs, 30, (), 1))
        [m] = await store.list_worker_mappings("w", 5)
        assert m.user_id == "v"
    finally:
        await holder.close()
        await store.close()


@pytest.mark.parametrize("case", ["live", "stale", "other", "expired", "finished", "elsewhere"])
@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
async def test_one_item_form_applies_only_a_live_attempt_of_this_worker(
    pg_dsn, op: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of one runs the one-item statements of migration 0011 (``*_one``): the same
    checks as the batch form, item by item — only this worker's live attempt of this project
    changes, and nothing else does."""
    clock = ManualClock()
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock)
    worker = PostgresWorker(store.database)
    used: list[str] = []
    fetchrow = store.database.fetchrow

    async def spy(name: str, *args: object) -> object:
        used.append(name)
        return await fetchrow(name, *args)

    monkeypatch.setattr(store.database, "fetchrow", spy)
    try:
        await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
        for project in ("p", "q"):
            await store.put_project(project, ProjectPut(status="active", identity_mode="none"))
            await store.enqueue(project, [JobSpec(f"v{i}") for i in range(4)])
        mine = (await store.claim("u", "p", ClaimRequest("w", 2, 30, (), 1))).jobs
        other = (await store.claim("u", "p", ClaimRequest("x", 1, 30, (), 1))).jobs
        short = (await store.claim("u", "p", ClaimRequest("w", 1, 1, (), 1))).jobs
        theirs = (await store.claim("u", "q", ClaimRequest("w", 1, 30, (), 1))).jobs
        await store.complete("u", "p", "w", [CompleteItem(mine[1].job_id, mine[1].attempt_id,
                                                          Outcome("success"), None)])  # fmt: skip
        clock.advance(2)  # `short` has expired
        ref = {
            "live": AttemptRef(mine[0].job_id, mine[0].attempt_id),
            "stale": AttemptRef(mine[0].job_id, "at_stale"),
            "other": AttemptRef(other[0].job_id, other[0].attempt_id),
            "expired": AttemptRef(short[0].job_id, short[0].attempt_id),
            "finished": AttemptRef(mine[1].job_id, mine[1].attempt_id),
            "elsewhere": AttemptRef(theirs[0].job_id, theirs[0].attempt_id),  # project q's
        }[case]
        before = [tuple(r) for p in ("p", "q") for r in await pool.fetch(_STATE, p)]
        used.clear()
        if op == "complete":
            out = await worker.complete(
                "u", "p", "w", [CompleteItem(ref.job_id, ref.attempt_id, Outcome("ok"), None)]
            )
        elif op == "fail":
            out = await worker.fail(
                "u", "p", "w", [FailItem(ref.job_id, ref.attempt_id, True, ExecutionError("e"))]
            )
        else:
            out = await worker.extend_lease("u", "p", "w", 60, [ref])
        assert used == [f"{op}_one_generic"]
        want = {"complete": "done", "fail": "todo", "extend": "wip"}[op] if case == "live" else None
        assert [(r.job_id, r.applied, r.job_status) for r in out] == [
            (ref.job_id, case == "live", want)
        ]
        after = [tuple(r) for p in ("p", "q") for r in await pool.fetch(_STATE, p)]
        assert len([a for a, b in zip(after, before, strict=True) if a != b]) == (
            1 if case == "live" else 0
        )
    finally:
        await store.close()
