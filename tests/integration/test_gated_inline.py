"""The gated functions run the small forms inline (migration 0018) and answer and write what
the gate read followed by the function they used to call would have.

Each case runs twice on the same rows, each time in a transaction that is rolled back: once
through ``tracker_gated_*``, once as the gate_row block followed by the called function
(``tracker_claim_op_*``, whose lean path of 0017 is the reference for the inline claim, or
``tracker_*_one`` / ``tracker_*_op``), combined as the gated function combines them. The answer, every column of
every job, the count deltas and the worker mapping must come out the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres.queries import queries
from hq_adapters.postgres.worker import ALLOWED_STATUSES
from hq_domain.projects import WorkerOp

pytestmark = pytest.mark.postgres

NOW = 1_000_000
DIGEST = b"\x01" * 32
_JOBS = """
INSERT INTO tracker_jobs (project_id, value, random_key, random_queue, spec, status, created_at,
                          updated_at)
SELECT 'p', 'v' || g, (g * 7919) % 1009, $1, CASE WHEN g % 3 = 0 THEN '{"type":"asset"}'
       ELSE '{}' END::jsonb, 'todo', 100 + g / 4, 100
FROM generate_series(1, 30) AS g
"""


def _block(name: str) -> str:
    return "\n".join(
        line for line in queries()[name].splitlines() if not line.lstrip().startswith("--")
    ).strip()


async def _state(conn: asyncpg.Connection) -> tuple[Any, ...]:
    jobs = await conn.fetch("SELECT * FROM tracker_jobs ORDER BY job_id")
    deltas = await conn.fetch(
        "SELECT project_id, status, sum(n) FROM tracker_job_count_deltas "
        "GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2"
    )
    workers = await conn.fetch("SELECT * FROM tracker_workers ORDER BY worker_id")
    return [dict(r) for r in jobs], [tuple(r) for r in deltas], [tuple(r) for r in workers]


async def _rolled_back(
    conn: asyncpg.Connection, run: Callable[[], Awaitable[Any]]
) -> tuple[Any, ...]:
    tx = conn.transaction()
    await tx.start()
    try:
        return await run(), await _state(conn)
    finally:
        await tx.rollback()


async def _setup(
    conn: asyncpg.Connection, *, order: str, status: str, mapped: str | None, expired: bool
) -> None:
    for user in ("u", "other"):
        await conn.execute(
            "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
            "VALUES ($1, 'active', '{worker}', 0, 0)", user,
        )  # fmt: skip
    await conn.execute(
        "INSERT INTO tracker_machine_tokens (user_id, token_hash, created_at) VALUES ('u', $1, 0)",
        DIGEST,
    )
    await conn.execute(
        "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, "
        "max_jobs_per_claim, client_versions, created_at, updated_at) "
        "VALUES ('p', $1, 'none', $2, 3, '{v1}', 0, 0)", status, order,
    )  # fmt: skip
    await conn.execute(_JOBS, order == "random")
    # leases of worker w (to complete), a live one of another worker, and maybe an expired one
    await conn.execute(
        "UPDATE tracker_jobs SET status = 'wip', attempt_id = 'at_' || job_id, "
        "worker_id = CASE WHEN job_id <= 3 THEN 'w' ELSE 'x' END, lease_expires_at = $1 "
        "WHERE job_id <= 4", NOW + 60,
    )  # fmt: skip
    if expired:
        await conn.execute(
            "UPDATE tracker_jobs SET status = 'wip', attempt_id = 'at_old', worker_id = 'x', "
            "lease_expires_at = $1 WHERE job_id = 30", NOW - 1,
        )  # fmt: skip
    if mapped:
        await conn.execute("INSERT INTO tracker_workers VALUES ('w', $1)", mapped)


async def _gate(conn: asyncpg.Connection, version: str) -> tuple[bool, tuple[Any, ...]]:
    """Whether the gate passes, and the head of a gated function's row: the project as JSON
    only for a gate that does not pass (migration 0020)."""
    g = await conn.fetchrow(_block("gate_row"), DIGEST, "p", version)
    project = None if g["passes"] else await conn.fetchval(
        "SELECT row_to_json(p)::text FROM tracker_projects p WHERE p.id = 'p'"
    )
    return g["passes"], (g["user_id"], g["user_status"], g["user_roles"], project)


CASES = [
    # order, project status, hint, worker mapping, an expired lease, client version
    ("fifo", "active", "fifo", None, False, "v1"),
    ("fifo", "active", "fifo", "u", False, "v1"),
    ("fifo", "active", "fifo", "other", False, "v1"),
    ("random", "active", "random", "u", False, "v1"),
    ("random", "active", "fifo", "u", False, "v1"),  # a stale hint: the project is random
    ("fifo", "active", "random", None, False, "v1"),
    ("fifo", "active", "fifo", "u", True, "v1"),  # the sweep: not the lean path
    ("random", "active", "random", None, True, "v1"),
    ("fifo", "archived", "fifo", "u", False, "v1"),  # refused claims
    ("fifo", "draining", "fifo", "u", False, "v1"),
    ("fifo", "active", "fifo", "u", False, "v2"),  # the gate refuses
]


@pytest.mark.parametrize(("order", "status", "hint", "mapped", "expired", "version"), CASES)
@pytest.mark.parametrize("max_jobs", [1, 4])
async def test_gated_claim_as_the_gate_then_the_claim_function(
    pg_dsn: str, order: str, status: str, hint: str, mapped: str | None, expired: bool,
    version: str, max_jobs: int,
) -> None:  # fmt: skip
    conn = await asyncpg.connect(pg_dsn)
    try:
        await _setup(conn, order=order, status=status, mapped=mapped, expired=expired)
        attempts = [f"at_n{i}" for i in range(max_jobs)]
        gated_args = [DIGEST, "p", version, hint, [], max_jobs, attempts, "w", NOW + 300, NOW,
                      256, ALLOWED_STATUSES[WorkerOp.CLAIM]]  # fmt: skip

        async def gated() -> tuple[Any, ...]:
            marks = ", ".join(f"${k}" for k in range(1, 13))
            sql = f"SELECT * FROM tracker_gated_claim({marks})"
            return tuple(await conn.fetchrow(sql, *gated_args))

        async def composed() -> tuple[Any, ...]:
            passes, head = await _gate(conn, version)
            if not passes:
                return (*head, False, None, None, None, None, None, None, None, None)
            rows = await conn.fetch(
                f"SELECT * FROM tracker_claim_op_{hint}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                "p", [], max_jobs, attempts, "w", NOW + 300, NOW, head[0], 256,
                ALLOWED_STATUSES[WorkerOp.CLAIM],
            )  # fmt: skip
            got = sorted((r for r in rows if r["job_id"] is not None), key=lambda r: r["ord"])
            column = lambda name: [r[name] for r in got] or None  # noqa: E731
            return (*head, True, all(r["fast"] for r in rows),
                    max(r["policy_version"] for r in rows), column("job_id"),
                    column("attempt_id"), column("lease_expires_at"), column("value"),
                    column("external_id"), column("spec"))  # fmt: skip

        inline = await _rolled_back(conn, gated)
        assert inline == await _rolled_back(conn, composed)
        answer, (_, _, workers) = inline
        if status == "active" and version == "v1" and hint == order:
            assert answer[5] is True and len(answer[7]) == min(max_jobs, 3)
            assert workers == [("w", "u")]
    finally:
        await conn.close()


# (job ids, attempt ids): worker w holds jobs 1-3 as at_1..at_3, another worker job 4
BATCHES = [
    ([1], ["at_1"]), ([2], ["at_2"]), ([1], ["at_wrong"]), ([4], ["at_4"]),
    ([3, 1, 2], ["at_3", "at_1", "at_2"]),  # out of order
    ([2, 2, 1], ["at_2", "at_2", "at_1"]),  # a repeated item: the first one applies
    ([1, 1, 4], ["at_x", "at_1", "at_4"]),  # a stale attempt, then the right one; a foreign job
    ([5, 6], ["at_5", "at_6"]),  # nothing leased
]


@pytest.mark.parametrize("op", ["complete", "fail", "extend"])
@pytest.mark.parametrize(("jobs", "attempts"), BATCHES)
@pytest.mark.parametrize(
    ("status", "mapped", "version"),
    [("active", "u", "v1"), ("active", None, "v1"), ("draining", "other", "v1"),
     ("archived", "u", "v1"), ("active", "u", "v2")],
)  # fmt: skip
async def test_gated_item_forms_as_the_gate_then_the_item_function(
    pg_dsn: str, op: str, jobs: list[int], attempts: list[str], status: str,
    mapped: str | None, version: str,
) -> None:  # fmt: skip
    conn = await asyncpg.connect(pg_dsn)
    try:
        await _setup(conn, order="fifo", status=status, mapped=mapped, expired=False)
        now = NOW + 1
        allowed = ALLOWED_STATUSES[WorkerOp(op)]
        n = len(jobs)
        if op == "extend":
            tail: list[Any] = [now, NOW + 600]
        elif op == "complete":
            tail = [[f'{{"kind":"success","n":{i}}}' for i in range(n)], [None] * n, now]
        else:
            tail = [[i % 2 == 0 for i in range(n)], [f'{{"kind":"x","n":{i}}}' for i in range(n)], now]
        gated_args = [DIGEST, "p", version, "w", jobs, attempts, *tail, allowed]

        async def gated() -> tuple[Any, ...]:
            marks = ", ".join(f"${k}" for k in range(1, len(gated_args) + 1))
            sql = f"SELECT * FROM tracker_gated_{op}({marks})"
            return tuple(await conn.fetchrow(sql, *gated_args))

        async def composed() -> tuple[Any, ...]:
            passes, head = await _gate(conn, version)
            if not passes:
                return (*head, False, None, None)
            args = ["p", "w", jobs, attempts, *tail, head[0], allowed]
            marks = ", ".join(f"${k}" for k in range(1, len(args) + 1))
            form = "one" if n == 1 else "op"
            r = await conn.fetchrow(f"SELECT * FROM tracker_{op}_{form}({marks})", *args)
            return (*head, True, r["ok"], r["job_statuses"])

        inline = await _rolled_back(conn, gated)
        assert inline == await _rolled_back(conn, composed)
        if (status, version) == ("active", "v1"):
            answer, (_, _, workers) = inline
            applied = {"complete": "done", "fail": "todo", "extend": "wip"}[op]
            if (jobs, attempts) == ([1], ["at_1"]):
                assert answer[5:] == (True, [applied])
            if (jobs, attempts) == ([2, 2, 1], ["at_2", "at_2", "at_1"]):
                assert answer[6][1] is None and answer[6][0] is not None
            assert workers == [("w", "u")]
    finally:
        await conn.close()
