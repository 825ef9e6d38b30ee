"""Issue 14: what one status-changing UPDATE pays for the job-count trigger, on one backend.

A scratch database (migrated by this tree) holds one project with 2,000 todo jobs. Each run is
a server-side loop of N iterations: UPDATE B jobs todo → wip, COMMIT, UPDATE them back, COMMIT
(synchronous_commit off, so the fsync does not drown the difference). The figure is the
backend's CPU (``/proc``) per statement. Variants, interleaved run by run:

* ``stmt``: the 0004 statement-level trigger as migrated (transition tables, INSERT … SELECT …
  GROUP BY into the delta table);
* ``none``: no count trigger;
* ``noop``: a statement-level trigger with transition tables whose function does nothing
  (the cost of firing and capturing);
* ``row``: a row-level trigger ``WHEN (OLD.status IS DISTINCT FROM NEW.status)`` inserting two
  delta rows per changed job.

    uv run python -m benchmarks.count_trigger_micro [--batch 1] [--iterations 5000] [--repeat 5]

The server must run on this machine (CPU is read from ``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess

import asyncpg

from benchmarks import env

_SETUP = """
INSERT INTO tracker_projects (id, status, created_at, updated_at) VALUES ('p', 'active', 0, 0);
INSERT INTO tracker_jobs (project_id, value, status, created_at, updated_at, random_key)
SELECT 'p', 'v' || g, 'todo', g, g, g FROM generate_series(1, 2000) g;
CREATE FUNCTION micro_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    VALUES (NEW.project_id, NEW.status, 1), (OLD.project_id, OLD.status, -1);
    RETURN NULL;
END $$;
CREATE TRIGGER micro_row AFTER UPDATE OF status ON tracker_jobs FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION micro_row();
CREATE FUNCTION micro_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER micro_noop AFTER UPDATE ON tracker_jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION micro_noop();
"""
_TRIGGERS = ("tracker_job_counts_upd", "tracker_job_resets", "micro_row", "micro_noop")
_VARIANTS = {
    "stmt": {"tracker_job_counts_upd"},
    "none": set(),
    "noop": {"micro_noop"},
    "row": {"micro_row"},
}
_LOOP = """
DO $$
DECLARE lo int;
BEGIN
FOR i IN 1..{n} LOOP
    lo := (i * {b}) % 1600 + 1;
    UPDATE tracker_jobs SET status = 'wip', attempt_id = 'a', worker_id = 'w', lease_expires_at = 1
    WHERE job_id >= lo AND job_id < lo + {b};
    COMMIT;
    UPDATE tracker_jobs
    SET status = 'todo', attempt_id = NULL, worker_id = NULL, lease_expires_at = NULL
    WHERE job_id >= lo AND job_id < lo + {b};
    COMMIT;
END LOOP;
END $$
"""


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.count_trigger_micro", description=__doc__)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--iterations", type=int, default=5000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--admin-dsn", default=env.ADMIN_DSN)
    args = p.parse_args()
    async with env.bench_database(args.admin_dsn) as dsn:
        subprocess.run([*env.tracker_command(), "migrate", "--database-url", dsn], check=True,
                       capture_output=True, cwd=env.REPO_ROOT)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(_SETUP)
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            await conn.execute("SET synchronous_commit = off")
            res: dict[str, list[float]] = {k: [] for k in _VARIANTS}
            for _ in range(args.repeat):
                for name, enabled in _VARIANTS.items():
                    for t in _TRIGGERS:
                        verb = "ENABLE" if t in enabled else "DISABLE"
                        await conn.execute(f"ALTER TABLE tracker_jobs {verb} TRIGGER {t}")
                    await conn.execute("DELETE FROM tracker_job_count_deltas")
                    await conn.execute("VACUUM tracker_jobs, tracker_job_count_deltas")
                    c0 = _cpu_s(pid)
                    await conn.execute(_LOOP.format(n=args.iterations, b=args.batch))
                    res[name].append(1e6 * (_cpu_s(pid) - c0) / (2 * args.iterations))
            print(f"B={args.batch}, {args.iterations} × 2 statements, {args.repeat} interleaved runs")
            for name, runs in res.items():
                print(f"{name:5s} µs/statement median {statistics.median(runs):7.1f}   runs "
                      + " ".join(f"{x:.0f}" for x in runs))
        finally:
            await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
