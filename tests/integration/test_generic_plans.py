"""The worker statements that run under cached generic plans (migration 0006).

A generic plan is made once per server connection from whatever statistics exist then, and
never sees the batch. So these tests (1) keep each function's body identical to its named
block, (2) check the functions carry their own plan mode, and (3) build the generic plan of
every block under statistics gathered while the project looked nothing like it does at run
time (all todo then; thousands of finished rows and live leases now, another big project) and
check that no scan of ``tracker_jobs`` reads more than the batch and the sweep bound: primary
key probes for the job ids, the claim and expiry indexes for the queue, and no join filter
that grows faster than the batch (a generic plan estimates unnest($n) at ten rows, so a join
over the items could run as items × items; at GENERIC_PLAN_MAX_ITEMS that would show).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres.queries import queries
from hq_adapters.postgres.worker import ALLOWED_STATUSES, GENERIC_PLAN_MAX_ITEMS
from hq_domain.projects import WorkerOp

pytestmark = pytest.mark.postgres

_OPS = (
    "claim_op_fifo",
    "claim_op_random",
    "complete_op",
    "fail_op",
    "extend_op",
    "complete_one",
    "fail_one",
    "extend_one",
)
B = GENERIC_PLAN_MAX_ITEMS
SWEEP = 256
NOW = 1_000_000
# What every worker function carries (0006, 0009); the tests plan under the same settings.
FUNCTION_SETTINGS = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    "enable_bitmapscan": "off",
}
# ... and what the claim functions add (0015): their plans never sort the queue, and are not
# JIT-compiled (the disabled sorts' cost would trigger it).
CLAIM_SETTINGS = {"enable_sort": "off", "jit": "off"}
_CONFIG = sorted(f"{k}={v}" for k, v in FUNCTION_SETTINGS.items())
# The op functions count their own status changes and skip the count trigger (0013); the
# gated functions only call them, so they leave the setting to them.
_OP_CONFIG = sorted([*_CONFIG, "hq.counted=on"])
_CLAIM_CONFIG = sorted([*_OP_CONFIG, *(f"{k}={v}" for k, v in CLAIM_SETTINGS.items())])
_CUSTOM_CLAIM_CONFIG = sorted(
    ["plan_cache_mode=force_custom_plan", "hq.counted=on",
     *(f"{k}={v}" for k, v in CLAIM_SETTINGS.items())]
)  # fmt: skip


# 0018: the blocks each gated function runs inline, and what their $1, $2 … became there.
_CLAIM_ARGS = ("$2", "$5", "$6", "$7", "$8", "$9", "$10", "g.user_id", "$11", "$12")
_ONE_ARGS = ("$2", "$4", "$5", "$6", "$7", "$8", "$9", "g.user_id", "$10")
_INLINE = {
    "gated_claim": [
        (f"claim_lean{part}_{order}", _CLAIM_ARGS)
        for part in ("", "_ready") for order in ("fifo", "random")
    ],
    **{
        f"gated_{op}": [(f"{op}_{form}", args) for form in ("one", "op")]
        for op, args in (
            ("complete", _ONE_ARGS),
            ("fail", _ONE_ARGS),
            ("extend", ("$2", "$4", "$5", "$6", "$7", "$8", "g.user_id", "$9")),
        )
    },
}


def _renumbered(text: str, args: Sequence[str]) -> str:
    return re.sub(r"\$(\d+)", lambda m: args[int(m.group(1)) - 1], text)


def _statement(name: str) -> str:
    return "\n".join(
        line for line in queries()[name].splitlines() if not line.lstrip().startswith("--")
    ).strip()

# the line migration 0021 puts first in every claim function
_COMMIT_RULE = "    PERFORM tracker_claim_commit_mode();\n"

async def test_function_bodies_are_the_named_blocks(pg_dsn) -> None:
    """pg_proc holds each function as the latest migration that replaced it left it (0006,
    then 0008, which calls the rule functions): that body must be the block as it reads now."""
    conn = await asyncpg.connect(pg_dsn)
    try:
        for name in _OPS:
            src, config = await conn.fetchrow(
                "SELECT prosrc, proconfig FROM pg_proc WHERE proname = $1", f"tracker_{name}"
            )
            body = src.rsplit("RETURN QUERY\n", 1)[1].rsplit(";\nEND", 1)[0].strip()
            assert body == _statement(name), f"{name}: replace tracker_{name} in a migration"
            assert sorted(config) == (_CLAIM_CONFIG if name.startswith("claim") else _OP_CONFIG)
            if name.startswith("claim"):  # ... after the lean claim (0017), when it is ready,
                lean = name.replace("claim_op", "claim_lean")  # and the commit rule (0021)
                ready = name.replace("claim_op", "claim_lean_ready")
                assert src.startswith(f"\n#variable_conflict use_column\nBEGIN\n{_COMMIT_RULE}"
                                      f"IF EXISTS (\n{_statement(ready)}\n) THEN\n"), name
                assert f"    RETURN QUERY\n{_statement(lean)};\n    RETURN;\nEND IF;\n" in src
        # Claims above GENERIC_PLAN_MAX_ITEMS: the same blocks, planned per execution (0015).
        for name in ("claim_op_fifo", "claim_op_random"):
            src, config = await conn.fetchrow(
                "SELECT prosrc, proconfig FROM pg_proc WHERE proname = $1", f"tracker_{name}_custom"
            )
            body = src.split("RETURN QUERY\n", 1)[1].rsplit(";\nEND", 1)[0].strip()
            assert body == _statement(name), f"{name}_custom: replace it in a migration"
            assert sorted(config) == _CUSTOM_CLAIM_CONFIG, name
        # The gated functions read the gate with the gate_row block written into them (0011),
        # and run the small forms inline, renumbered to their own parameters (0018).
        gate = f"SELECT * INTO g FROM (\n{_statement('gate_row')}\n    ) AS gate;"
        configs = {"worker_gate": _CONFIG, "gated_claim": _CLAIM_CONFIG}
        for name in ("worker_gate", "gated_claim", "gated_complete", "gated_fail", "gated_extend"):
            src, config = await conn.fetchrow(
                "SELECT prosrc, proconfig FROM pg_proc WHERE proname = $1", f"tracker_{name}"
            )
            assert sorted(config) == configs.get(name, _OP_CONFIG), name
            assert name == "worker_gate" or gate in src, f"{name}: the gate_row block, verbatim"
            if name == "gated_claim":  # its first statement is the commit rule (0021)
                assert src.split("BEGIN\n", 1)[1].startswith(_COMMIT_RULE), name
            for block, args in _INLINE.get(name, ()):
                text = _renumbered(_statement(block), args)
                if not block.startswith("claim_lean_ready"):
                    text = text.rsplit("\nSELECT ", 1)[0]  # all but the final SELECT
                assert text in src, f"{name}: the {block} block, renumbered"
        gone = "SELECT count(*) FROM pg_proc WHERE proname = 'tracker_gate_row'"
        assert await conn.fetchval(gone) == 0
    finally:
        await conn.close()


_JOB = """
INSERT INTO tracker_jobs (project_id, value, random_key, status, attempt_id, worker_id,
                          lease_expires_at, created_at, updated_at, completed_at)
SELECT $1, 'v' || g, (g * 7919) % 100003, $2,
       CASE WHEN $2 = 'wip' THEN 'at_' || g END, CASE WHEN $2 = 'wip' THEN $3 END,
       CASE WHEN $2 = 'wip' THEN $4::bigint END, g, g, CASE WHEN $2 = 'done' THEN g END
FROM generate_series(1, $5) AS g
"""


async def _setup(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
        "VALUES ('u', 'active', '{worker}', 0, 0)"
    )
    for project, order in (("p", "fifo"), ("r", "random"), ("big", "fifo")):
        await conn.execute(
            "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, created_at, "
            "updated_at) VALUES ($1, 'active', 'none', $2, 0, 0)",
            project,
            order,
        )
    # Statistics from when the projects held only a few todo rows ...
    for project in ("p", "r"):
        await conn.execute(_JOB, project, "todo", None, None, 200)
    await conn.execute("ANALYZE tracker_jobs")
    # ... and the table as the plans meet it: finished rows, live leases of this worker (more
    # than any batch), expired leases (more than the sweep bound), another big project.
    for project in ("p", "r"):
        await conn.execute(_JOB, project, "done", None, None, 5000)
        await conn.execute(_JOB, project, "wip", "w", NOW + 300, 2000)
        await conn.execute(_JOB, project, "wip", "old", NOW - 10, 2 * SWEEP)
    await conn.execute(_JOB, "big", "todo", None, None, 20000)


def _walk(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    for child in plan.get("Plans", ()):
        out += _walk(child)
    return out


# The claim functions' parameter types: the lean claim's readiness test binds only some of
# them, so it is prepared with all of them declared.
_CLAIM_TYPES = "(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])"


async def _explain(conn: asyncpg.Connection, name: str, args: list[Any]) -> list[dict[str, Any]]:
    """Prepare the block ``name`` as its function plans it (a claim with CLAIM_SETTINGS on top
    of the session's FUNCTION_SETTINGS) and EXPLAIN ANALYZE its first execution."""
    extra = CLAIM_SETTINGS if name.startswith("claim") else {}
    for key, value in extra.items():
        await conn.execute(f"SET {key} = {value}")
    try:
        types = _CLAIM_TYPES if name.startswith("claim_lean_ready") else ""
        await conn.execute(f"PREPARE {name}{types} AS {_statement(name)}")
        return await _execute(conn, name, args)
    finally:
        for key in extra:
            await conn.execute(f"RESET {key}")


async def _execute(conn: asyncpg.Connection, name: str, args: list[Any]) -> list[dict[str, Any]]:
    """EXPLAIN ANALYZE the prepared statement ``name`` (its cached plan, if it has one)."""
    text = await conn.fetchval(
        f"EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) EXECUTE {name}"
        f"({', '.join(await _literals(conn, args))})"
    )
    # The rule functions of migration 0008 are inlined: no plan calls one (an inlined
    # set-returning one leaves only its name as the alias of a subquery).
    assert not re.search(r"tracker_rule_\w+\(", text), f"{name}: a rule function not inlined"
    return _walk(json.loads(text)[0]["Plan"])


async def _literals(conn: asyncpg.Connection, args: list[Any]) -> list[str]:
    """EXPLAIN EXECUTE takes the parameters as SQL literals: bind them through a helper query."""
    return await conn.fetchval(
        "SELECT array_agg(quote_nullable(x)) FROM unnest($1::text[]) AS x",
        [
            a if isinstance(a, str) or a is None else _array(a) if isinstance(a, list) else str(a)
            for a in args
        ],
    )


def _array(values: list[Any]) -> str:
    def one(v: Any) -> str:
        return "t" if v is True else "f" if v is False else str(v)

    return "{" + ",".join('"' + one(v).replace('"', '\\"') + '"' for v in values) + "}"


def _check(
    nodes: list[dict[str, Any]], allowed: set[str], most: int, joined: int = 4 * B
) -> None:
    for n in nodes:
        if n.get("Relation Name") == "tracker_jobs" and n["Node Type"] != "ModifyTable":
            assert n["Node Type"] in {"Index Scan", "Index Only Scan"}, n["Node Type"]
            assert n["Index Name"] in allowed, (
                n["Index Name"],
                n.get("Subplan Name"),
                n.get("Index Cond"),
                n.get("Filter"),
                n.get("Parent Relationship"),
            )
            read = (n["Actual Rows"] + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"]
            assert read <= most, (n["Index Name"], read)
        assert n.get("Rows Removed by Join Filter", 0) <= joined, n["Node Type"]


def _mutations(ids: list[int], attempts: list[str]) -> dict[str, list[Any]]:
    n = len(ids)
    return {
        "complete_op": [
            "p",
            "w",
            ids,
            attempts,
            ["{}"] * n,
            ["null"] * n,
            NOW,
            "u",
            ALLOWED_STATUSES[WorkerOp.COMPLETE],
        ],
        "fail_op": [
            "p",
            "w",
            ids,
            attempts,
            [True] * n,
            ['{"code":"e"}'] * n,
            NOW,
            "u",
            ALLOWED_STATUSES[WorkerOp.FAIL],
        ],
        "extend_op": [
            "p",
            "w",
            ids,
            attempts,
            NOW,
            NOW + 600,
            "u",
            ALLOWED_STATUSES[WorkerOp.EXTEND],
        ],
    }


def _ones(ids: list[int], attempts: list[str]) -> dict[str, list[Any]]:
    """The one-item forms (migration 0011) with the first held item."""
    return {name.replace("_op", "_one"): args
            for name, args in _mutations(ids[:1], attempts[:1]).items()}  # fmt: skip


_HELD = """
SELECT job_id, attempt_id FROM tracker_jobs
WHERE project_id = 'p' AND worker_id = 'w' AND lease_expires_at > $1
ORDER BY job_id DESC LIMIT $2
"""
_RESTORE = """
UPDATE tracker_jobs SET status = 'wip', attempt_id = 'at_' || substr(value, 2), worker_id = 'w',
    lease_expires_at = $1, completed_at = NULL, outcome = NULL, execution_error = NULL,
    reset_count = 0
WHERE job_id = ANY ($2::bigint[])
"""


async def test_custom_plans_of_large_batches_touch_each_item_once(pg_dsn) -> None:
    """Batches above GENERIC_PLAN_MAX_ITEMS are planned with their size (force_custom_plan):
    the lock scan and the UPDATE still probe the primary key and never filter items × items."""
    big = 256
    conn = await asyncpg.connect(pg_dsn, server_settings={"plan_cache_mode": "force_custom_plan"})
    try:
        await _setup(conn)
        held = await conn.fetch(_HELD, NOW, big)
        ids, attempts = [r["job_id"] for r in held], [r["attempt_id"] for r in held]
        for name, args in _mutations(ids, attempts).items():
            _check(await _explain(conn, name, args), {"tracker_jobs_pkey"}, big, joined=4 * big)
            await conn.execute(_RESTORE, NOW + 300, ids)
    finally:
        await conn.close()


def _claim_args(project: str, batch: int = B) -> list[object]:
    """A claim of ``batch`` jobs by worker w (user u) with the sweep bound SWEEP, at NOW."""
    attempts = [f"at_new{i}" for i in range(batch)]
    return [project, [], batch, attempts, "w", NOW + 300, NOW, "u", SWEEP,
            ALLOWED_STATUSES[WorkerOp.CLAIM]]  # fmt: skip


def _check_queue_read(nodes: list[dict[str, Any]], queue: str, most: int) -> None:
    """The claim reads the queue through ``queue`` (its order), and each scan of
    tracker_jobs reads at most ``most`` rows. A per-execution plan may update the claimed
    rows through a bitmap of primary-key probes; that is the batch too."""
    for n in nodes:
        if n.get("Relation Name") == "tracker_jobs" and n["Node Type"] == "Bitmap Heap Scan":
            assert n["Actual Rows"] * n["Actual Loops"] <= most
    _check(
        [n for n in nodes if n["Node Type"] != "Bitmap Heap Scan"],
        {queue, "tracker_jobs_expired_order_idx", "tracker_jobs_pkey"},
        most,
    )


async def test_generic_plans_read_only_the_batch_and_the_sweep(pg_dsn) -> None:
    conn = await asyncpg.connect(pg_dsn, server_settings=FUNCTION_SETTINGS)
    try:
        await _setup(conn)
        for name, project in (("claim_op_fifo", "p"), ("claim_op_random", "r")):
            nodes = await _explain(conn, name, _claim_args(project))
            queue = "tracker_jobs_claim_idx" if project == "p" else "tracker_jobs_claim_random_idx"
            _check(
                nodes,
                {queue, "tracker_jobs_expired_order_idx", "tracker_jobs_pkey"},
                SWEEP + B + 1,
            )
            # The lean claim (0017): its readiness test probes the expired leases once, and
            # the claim reads the queue head and the claimed rows' keys.
            lean = name.replace("claim_op", "claim_lean")
            ready = await _explain(conn, lean.replace("lean", "lean_ready"), _claim_args(project))
            _check(ready, {"tracker_jobs_expired_order_idx"}, 1)
            _check(await _explain(conn, lean, _claim_args(project)[:7]), {queue, "tracker_jobs_pkey"}, B)
        held = await conn.fetch(_HELD, NOW, B)
        ids, attempts = [r["job_id"] for r in held], [r["attempt_id"] for r in held]
        for name, args in _mutations(ids, attempts).items():
            _check(await _explain(conn, name, args), {"tracker_jobs_pkey"}, B)
            await conn.execute(_RESTORE, NOW + 300, ids)  # EXPLAIN ANALYZE wrote: undo it
        for name, args in _ones(ids, attempts).items():
            _check(await _explain(conn, name, args), {"tracker_jobs_pkey"}, 1)
            await conn.execute(_RESTORE, NOW + 300, ids)
    finally:
        await conn.close()


async def test_generic_plans_cached_on_a_young_table_stay_on_the_batch(pg_dsn) -> None:
    """A server connection builds its generic plan at its first request and keeps it until
    something invalidates it. On a young database (never analysed, a few rows: the planner
    guesses 0.5 % of the table per project) every scan must still read only the batch, the
    queue head and the sweep bound once the project has grown. Found by a profile: each B=1
    complete read all 3,000 jobs of its project through the (project_id, status) index. The
    young table holds more of the project's leases than the sweep bound: with a few hundred, the
    full claim's sweep read the global expiry index, filtered by project (migration 0019)."""
    conn = await asyncpg.connect(pg_dsn, server_settings=FUNCTION_SETTINGS)
    try:
        await conn.execute("ALTER TABLE tracker_jobs SET (autovacuum_enabled = off)")
        await conn.execute(
            "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
            "VALUES ('u', 'active', '{worker}', 0, 0)"
        )
        await conn.execute(
            "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, created_at, "
            "updated_at) VALUES ('p', 'active', 'none', 'fifo', 0, 0)"
        )
        await conn.execute(_JOB, "p", "wip", "w", NOW + 300, max(B, 2 * SWEEP))
        held = await conn.fetch(_HELD, NOW, B)
        ids, attempts = [r["job_id"] for r in held], [r["attempt_id"] for r in held]
        ops = {"claim_op_fifo": _claim_args("p"), "claim_lean_ready_fifo": _claim_args("p"),
               "claim_lean_fifo": _claim_args("p")[:7],
               **_mutations(ids, attempts), **_ones(ids, attempts)}  # fmt: skip
        for name, args in ops.items():  # the first request plans while the table is young
            await _explain(conn, name, args)
            await conn.execute(_RESTORE, NOW + 300, ids)
        await conn.execute("DELETE FROM tracker_jobs WHERE NOT (job_id = ANY ($1::bigint[]))", ids)
        for status in ("done", "todo"):
            await conn.execute(_JOB, "p", status, None, None, 10000)
        await conn.execute(_JOB, "p", "wip", "old", NOW - 10, 2 * SWEEP)
        for name, args in ops.items():
            nodes = await _execute(conn, name, args)
            if name == "claim_op_fifo":
                allowed = {
                    "tracker_jobs_claim_idx",
                    "tracker_jobs_expired_order_idx",
                    "tracker_jobs_pkey",
                }
                _check(nodes, allowed, SWEEP + B + 1)
            elif name == "claim_lean_ready_fifo":
                _check(nodes, {"tracker_jobs_expired_order_idx"}, 1)
            elif name == "claim_lean_fifo":
                _check(nodes, {"tracker_jobs_claim_idx", "tracker_jobs_pkey"}, B)
            else:
                _check(nodes, {"tracker_jobs_pkey"}, 1 if name.endswith("_one") else B)
            await conn.execute(_RESTORE, NOW + 300, ids)
    finally:
        await conn.close()


async def _refilled_with_a_cheaper_looking_index(
    conn: asyncpg.Connection, projects: Sequence[tuple[str, str]]
) -> None:
    """The state of the two tests below: tracker_jobs vacuumed while empty (reltuples 0, so
    the planner expects about one todo row per project), a hash index on the todo rows
    (cheaper to probe than either claim index at that estimate), then each (project, claim
    order) refilled with 5,000 todo rows and leases expired past the sweep bound."""
    await conn.execute("ALTER TABLE tracker_jobs SET (autovacuum_enabled = off)")
    await conn.execute("VACUUM tracker_jobs")
    await conn.execute(
        "CREATE INDEX hq_test_todo_hash ON tracker_jobs USING hash (project_id)"
        " WHERE status = 'todo'"
    )
    await conn.execute(
        "INSERT INTO tracker_users (id, status, roles, created_at, updated_at) "
        "VALUES ('u', 'active', '{worker}', 0, 0)"
    )
    for project, order in projects:
        await conn.execute(
            "INSERT INTO tracker_projects (id, status, identity_mode, claim_order, "
            "created_at, updated_at) VALUES ($1, 'active', 'none', $2, 0, 0)",
            project,
            order,
        )
        await conn.execute(_JOB, project, "todo", None, None, 5000)
        await conn.execute(_JOB, project, "wip", "old", NOW - 10, 2 * SWEEP)


@pytest.mark.parametrize(("plans", "batch"), [("generic", B), ("custom", 4 * B)])
async def test_claims_read_their_own_index_when_another_looks_cheaper(
    pg_dsn, plans: str, batch: int
) -> None:
    """When the statistics say a project holds about one todo row (here: the table vacuumed
    while empty, then filled, as after a drained queue is refilled before autovacuum comes
    back), sorting the queue looks free, and a claim plan may read it through any index that
    finds the project's todo rows and sort them: every claim then reads the whole queue (found
    at B=4 W=4: the FIFO claim read 5,000-14,000 rows through the random-order index, 11 ms a
    claim). A hash index on the todo rows, cheaper to probe than either claim index at that
    estimate, stands in for such an index: each claim must still read its own index in order,
    only the batch and the sweep bound (migration 0015: the claim functions plan with
    enable_sort = off), in their generic plans and in the per-execution plans of larger claims.
    """
    settings = (
        FUNCTION_SETTINGS if plans == "generic" else {"plan_cache_mode": "force_custom_plan"}
    )
    conn = await asyncpg.connect(pg_dsn, server_settings=settings)
    try:
        await _refilled_with_a_cheaper_looking_index(conn, [("p", "fifo"), ("r", "random")])
        for name, project, queue in (
            ("claim_op_fifo", "p", "tracker_jobs_claim_idx"),
            ("claim_op_random", "r", "tracker_jobs_claim_random_idx"),
        ):
            nodes = await _explain(conn, name, _claim_args(project, batch))
            _check_queue_read(nodes, queue, SWEEP + batch + 1)
            if plans == "generic":  # the lean claim (0017) runs only under generic plans
                lean = name.replace("claim_op", "claim_lean")
                nodes = await _explain(conn, lean, _claim_args(project, batch)[:7])
                _check_queue_read(nodes, queue, batch)
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("name", "project", "queue"),
    [("claim_fifo", "p", "tracker_jobs_claim_idx"),
     ("claim_random", "r", "tracker_jobs_claim_random_idx")],
)  # fmt: skip
async def test_general_claim_reads_its_own_index_when_another_looks_cheaper(
    pg_dsn, name: str, project: str, queue: str
) -> None:
    """The general claim (dispatch-limited and audited projects, claim_in_steps) runs the
    claim_fifo/claim_random blocks in its transaction after claim_plan_settings: under the
    statistics of the test above they too read only their own index, in order. The block sets
    exactly what the claim functions carry (CLAIM_SETTINGS, checked against pg_proc above)."""
    conn = await asyncpg.connect(pg_dsn, server_settings={"plan_cache_mode": "force_custom_plan"})
    try:
        order = "fifo" if project == "p" else "random"
        await _refilled_with_a_cheaper_looking_index(conn, [(project, order)])
        tx = conn.transaction()
        await tx.start()
        try:
            await conn.execute(queries()["claim_plan_settings"])
            for key, value in CLAIM_SETTINGS.items():
                assert await conn.fetchval("SELECT current_setting($1)", key) == value, key
            await conn.execute(f"PREPARE {name} AS {_statement(name)}")
            attempts = [f"at_new{i}" for i in range(B)]
            nodes = await _execute(
                conn, name, [project, [], B, attempts, "w", NOW + 300, NOW]
            )
        finally:
            await tx.rollback()
        _check_queue_read(nodes, queue, B)
        # ... and only for its transaction
        assert await conn.fetchval("SELECT current_setting('enable_sort')") == "on"
    finally:
        await conn.close()


async def test_rule_functions_are_inlined_in_the_other_worker_statements(pg_dsn) -> None:
    """The worker.sql blocks that call a rule function (the ops are checked above) plan with
    it inlined, generic or custom."""
    statuses = ALLOWED_STATUSES[WorkerOp.CLAIM]
    claim = [[], 4, ["n1", "n2", "n3", "n4"], "w", NOW + 300, NOW]
    blocks = {
        "worker_context": ["u", "p", "w", statuses],
        "sweep_project": ["p", NOW, SWEEP, 3],
        "sweep_expired": [NOW, SWEEP],
        "claim_fifo": ["p", *claim],
        "claim_random": ["r", *claim],
        "todo_exists": ["p", ["seed"]],
    }
    for mode in ("force_generic_plan", "force_custom_plan"):
        conn = await asyncpg.connect(pg_dsn, server_settings={"plan_cache_mode": mode})
        try:
            tx = conn.transaction()
            await tx.start()
            if mode == "force_generic_plan":
                await _setup(conn)
            for name, args in blocks.items():
                await _explain(conn, name, args)
            await tx.rollback()
        finally:
            await conn.close()


async def test_the_global_sweeps_read_the_global_expiry_index(pg_dsn) -> None:
    """The background sweep and the expired-lease gauge name `worker_id IS NOT NULL`, the part
    of tracker_jobs_lease_sweep_order_idx's predicate that keeps the claims' sweeps off it
    (migration 0019): without it they could not use the index at all. On this small table a
    sequential scan would win, so the test forbids the scans that need no index."""
    conn = await asyncpg.connect(pg_dsn, server_settings=FUNCTION_SETTINGS)
    try:
        await _setup(conn)
        await conn.execute("ANALYZE tracker_jobs")
        for name, args in (("sweep_expired", [NOW, 10]), ("expired_wip_all", [NOW])):
            await conn.execute(f"PREPARE {name} AS {_statement(name)}")
            scans = [n.get("Index Name") for n in await _execute(conn, name, args)]
            assert "tracker_jobs_lease_sweep_order_idx" in scans, (name, scans)
    finally:
        await conn.close()
