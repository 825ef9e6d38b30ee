"""Issue 14: what the job-count triggers (migration 0004) cost the claim path, and what the
counter table saves GET project / list projects.

Part 1 (``cost``): claim(B) → complete cycles through PostgresStore by W concurrent workers
(one pooled connection each, no HTTP: the database share of a request is what the triggers
touch, so this is the strictest view of their cost). Runs alternate counting on / off
(``ALTER TABLE … ENABLE/DISABLE TRIGGER``, and since migration 0013 the worker functions' own
counting, ``SET hq.counted = on/off``) under the same conditions; each run reports cycles/s,
PostgreSQL backend CPU per job (utime+stime of the workers' backends from /proc, so the server
must run on this machine) and the benchmark process CPU per job.

Part 2 (``reads``): the old count(*) summary queries (kept here as the baseline) against the
counter-table queries, at 0 and N finished rows in one project, with P projects listed.

    uv run python -m benchmarks.counts --dsn postgresql://postgres@127.0.0.1/test [--rows 1000000]
The database named by --dsn is used only to create (and drop) a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from benchmarks import env
from benchmarks.loadgen.admin import Target
from hq_adapters.postgres import connect
from hq_adapters.postgres.migrate import migrate
from hq_adapters.postgres.queries import parse, q
from hq_domain.clock import SystemClock
from hq_domain.jobs import Outcome
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import ClaimRequest, CompleteItem

SCALE = parse((Path(__file__).parent / "scale.sql").read_text())
# The count triggers (0004) and the reset counter (0010): what issue 14 adds to every write.
TRIGGERS = ("tracker_job_counts_ins", "tracker_job_counts_upd", "tracker_job_counts_del",
            "tracker_job_resets")
TICK = os.sysconf("SC_CLK_TCK")

OLD_GET = """
SELECT p.*, c.todo, c.wip, c.done, c.failed, c.reset_exhausted
FROM tracker_projects p
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE j.status = 'todo') AS todo,
           count(*) FILTER (WHERE j.status = 'wip') AS wip,
           count(*) FILTER (WHERE j.status = 'done') AS done,
           count(*) FILTER (WHERE j.status = 'failed') AS failed,
           count(*) FILTER (WHERE j.status = 'reset_exhausted') AS reset_exhausted
    FROM tracker_jobs j WHERE j.project_id = p.id
) c
"""
OLD = {"get": OLD_GET + "WHERE p.id = $1", "list": OLD_GET + "ORDER BY p.id"}
NEW = {"get": q("get_project_summary"), "list": q("list_projects")}


_TODO = """
INSERT INTO tracker_jobs (project_id, value, spec, status, random_key, created_at, updated_at)
SELECT $1, 'https://example.org/' || g, '{}'::jsonb, 'todo', g::integer, g, g
FROM generate_series(1, $2::bigint) AS g
"""


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def _scratch(dsn: str, name: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    scratch = dsn.rsplit("/", 1)[0] + "/" + name
    conn = await asyncpg.connect(scratch)
    try:
        await migrate(conn, int(time.time()))
    finally:
        await conn.close()
    return scratch


async def _drop(dsn: str, name: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


# The worker functions that count their own status changes (migration 0013): hq.counted = on
# in their SET clause. "Off" sets it to off, so their counted CTEs append nothing either.
_COUNTING_FUNCTIONS = """
SELECT oid::regprocedure::text FROM pg_proc
WHERE proconfig && ARRAY['hq.counted=on', 'hq.counted=off']
"""


async def set_triggers(conn: asyncpg.Connection, on: bool) -> None:
    """Turn all job counting on or off (the runs compare both states): every trigger in
    TRIGGERS, and the worker functions' own counting (0013)."""
    verb = "ENABLE" if on else "DISABLE"
    for t in TRIGGERS:
        await conn.execute(f"ALTER TABLE tracker_jobs {verb} TRIGGER {t}")
    for fn in await conn.fetch(_COUNTING_FUNCTIONS):
        await conn.execute(f"ALTER FUNCTION {fn[0]} SET hq.counted = {'on' if on else 'off'}")


@asynccontextmanager
async def served(admin_dsn: str) -> AsyncIterator[tuple[Target, asyncpg.Connection]]:
    """One ``tracker serve`` on a fresh bench database, and a connection to that database for
    toggling the triggers; the triggers are left enabled at the end."""
    with env.workdir() as tmp:
        work = Path(tmp)
        async with env.bench_database(admin_dsn) as dsn:
            token = env.prepare_database(dsn, work)
            async with env.tracker_server(dsn, token, work) as server:
                conn = await asyncpg.connect(dsn)
                try:
                    yield server.target, conn
                    await set_triggers(conn, True)
                finally:
                    await conn.close()


async def vacuum_between_runs(conn: asyncpg.Connection) -> None:
    """What autovacuum would have done between two runs on a deployment: each run enqueues,
    drains and deletes jobs, and every fold deletes the deltas it moved. Where the server runs
    with ``autovacuum = off`` (this workplace's machines do) their dead rows would otherwise
    pile up over the session, in the delta heap only while counting is on, and later runs
    would measure the bloat rather than the counting."""
    await conn.execute("VACUUM tracker_jobs, tracker_job_count_deltas, tracker_job_counts")


def alternating(repeat: int) -> list[bool]:
    """Triggers on/off for ``repeat`` pairs of runs, the order swapped every pair."""
    return [on for r in range(repeat) for on in ((True, False) if r % 2 == 0 else (False, True))]


def drain_problems(out: dict, on: bool) -> list[str]:
    """A scenario's problems, less the count check that fails by construction with the
    triggers off (the counts are not kept then); nothing else may fail."""
    return [x for x in out["problems"] if on or not x.startswith("job_counts")]


async def _run_cell(dsn: str, batch: int, workers: int, seconds: float, tag: str) -> dict:
    clock = SystemClock()
    admin = await connect(dsn, clock, min_size=1, max_size=1)
    pid = f"bench_{tag}"
    await admin.put_project(pid, ProjectPut(status="active", identity_mode="none"))
    need = int(max(batch * workers * 80, 2500) * seconds)  # generous: runs end by time
    async with admin.database.connection() as conn:
        await conn.execute(_TODO, pid, need)
    stores = [await connect(dsn, clock, min_size=1, max_size=1) for _ in range(workers)]
    backend = []
    for s in stores:
        async with s.database.connection() as conn:
            backend.append(await conn.fetchval("SELECT pg_backend_pid()"))
    jobs_done = 0
    stop_at = 0.0

    async def worker(i: int, store) -> None:
        nonlocal jobs_done
        while time.monotonic() < stop_at:
            got = (await store.claim("u", pid, ClaimRequest(f"w{i}", batch, 600, (), 1))).jobs
            if not got:
                return
            await store.complete("u", pid, f"w{i}", [
                CompleteItem(j.job_id, j.attempt_id, Outcome("success"), None) for j in got])
            jobs_done += len(got)

    cpu0 = [_cpu_s(b) for b in backend]
    me0 = time.process_time()
    t0 = time.monotonic()
    stop_at = t0 + seconds
    await asyncio.gather(*(worker(i, s) for i, s in enumerate(stores)))
    elapsed = time.monotonic() - t0
    pg_cpu = sum(_cpu_s(b) for b in backend) - sum(cpu0)
    me = time.process_time() - me0
    for s in stores:
        await s.close()
    await admin.close()
    return {
        "jobs_per_s": jobs_done / elapsed,
        "pg_cpu_us_per_job": 1e6 * pg_cpu / max(1, jobs_done),
        "client_cpu_us_per_job": 1e6 * me / max(1, jobs_done),
    }


async def cost(dsn: str, cells: list[tuple[int, int]], repeat: int, seconds: float) -> None:
    conn = await asyncpg.connect(dsn)
    await admin_user(dsn)
    print(f"load average at start: {os.getloadavg()}")
    print("cell      triggers  jobs/s (median)  pg CPU µs/job  client CPU µs/job   runs")
    try:
        for batch, workers in cells:
            res: dict[bool, list[dict]] = {True: [], False: []}
            for r, on in enumerate(alternating(repeat)):
                await set_triggers(conn, on)
                await vacuum_between_runs(conn)
                tag = f"b{batch}w{workers}r{r}{'on' if on else 'off'}"
                res[on].append(await _run_cell(dsn, batch, workers, seconds, tag))
            await set_triggers(conn, True)
            for on in (True, False):
                med = {k: statistics.median(x[k] for x in res[on]) for k in res[on][0]}
                runs = " ".join(f"{x['jobs_per_s']:.0f}" for x in res[on])
                print(f"B={batch:<3} W={workers:<3} {'on ' if on else 'off'}      "
                      f"{med['jobs_per_s']:10.0f}      {med['pg_cpu_us_per_job']:10.1f}"
                      f"      {med['client_cpu_us_per_job']:10.1f}      {runs}")
            on = statistics.median(x["pg_cpu_us_per_job"] for x in res[True])
            off = statistics.median(x["pg_cpu_us_per_job"] for x in res[False])
            ton = statistics.median(x["jobs_per_s"] for x in res[True])
            toff = statistics.median(x["jobs_per_s"] for x in res[False])
            print(f"          → throughput {100 * (ton / toff - 1):+.1f} %, "
                  f"pg CPU/job {100 * (on / off - 1):+.1f} %")
    finally:
        await conn.close()
    print(f"load average at end: {os.getloadavg()}")


async def admin_user(dsn: str) -> None:
    store = await connect(dsn, SystemClock(), min_size=1, max_size=1)
    await store.put_user("u", UserStatus.ACTIVE, [Role.WORKER])
    await store.close()


async def _time(conn: asyncpg.Connection, sql: str, *args, n: int = 5) -> float:
    await conn.fetch(sql, *args)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await conn.fetch(sql, *args)
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


async def reads(dsn: str, rows: list[int], projects: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        now = int(time.time())
        for i in range(projects):
            await conn.execute(
                "INSERT INTO tracker_projects (id, status, created_at, updated_at) "
                "VALUES ($1, 'active', 0, 0)", f"r{i:03d}")
        loaded = 0
        print(f"GET/list latency, median of 5 (ms), {projects} projects; load {os.getloadavg()}")
        print("rows in r000   old GET   new GET   old list   new list")
        for target in rows:
            while loaded < target:
                n = min(1_000_000, target - loaded)
                await conn.execute(SCALE["insert_finished"], "r000", now, loaded + 1, loaded + n)
                loaded += n
            await conn.execute("VACUUM ANALYZE tracker_jobs")
            res = [await _time(conn, OLD["get"], "r000"), await _time(conn, NEW["get"], "r000"),
                   await _time(conn, OLD["list"], n=3), await _time(conn, NEW["list"])]
            print(f"{target:>12,}   " + "   ".join(f"{x:7.2f}" for x in res))
    finally:
        await conn.close()


async def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.counts", description=__doc__)
    p.add_argument("--dsn", required=True)
    p.add_argument("--part", choices=["cost", "reads", "both"], default="both")
    p.add_argument("--cells", nargs="+", default=["1x4", "1x16", "64x4"], help="BxW")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--rows", type=int, nargs="+", default=[0, 1_000_000])
    p.add_argument("--projects", type=int, default=100)
    args = p.parse_args()
    name = f"hq_bench_counts_{os.getpid()}"
    scratch = await _scratch(args.dsn, name)
    try:
        if args.part in ("cost", "both"):
            cells = [tuple(int(x) for x in c.split("x")) for c in args.cells]
            await cost(scratch, cells, args.repeat, args.seconds)  # type: ignore[arg-type]
        if args.part in ("reads", "both"):
            await reads(scratch, args.rows, args.projects)
    finally:
        await _drop(args.dsn, name)


if __name__ == "__main__":
    asyncio.run(main())
