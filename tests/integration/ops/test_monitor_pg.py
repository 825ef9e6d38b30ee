"""``tracker monitor`` and ``prune-claim-buckets`` against a migrated database in a known state.

The state is written with raw SQL into the spec §2.12 tables (after the real migrations), so
these tests check the monitoring queries on rows the store's own writes never produce (receipts
stored as JSON null, an exhausted job without completed_at); the port's contract on both
adapters is tests/contract/monitor.py.
"""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_apps.cli import ops
from hq_domain.clock import ManualClock

pytestmark = pytest.mark.postgres

NOW = 1_800_000_000  # minute-aligned: NOW * 1000 % 60000 == 0
HOUR = 3600
DAY = 86400


async def add_project(conn, pid, status="active", qps=None, version=1) -> None:
    await conn.execute(
        "INSERT INTO tracker_projects (id, status, worker_claim_qps, policy_version,"
        " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
        pid, status, qps, version, NOW - DAY,
    )  # fmt: skip


async def add_job(conn, pid, status, *, created=NOW - HOUR, updated=None, lease=None,
                  completed=None, receipts="absent") -> None:  # fmt: skip
    wip = status == "wip"
    sql = (
        "INSERT INTO tracker_jobs (project_id, value, status, attempt_id, worker_id,"
        " lease_expires_at, created_at, updated_at, completed_at, random_key, artifact_receipts)"
        " VALUES ($1, 'v', $2, $3, $4, $5, $6, $7, $8, 0, $9::jsonb)"
    )
    receipts_json = None if receipts == "absent" else json.dumps(receipts)
    await conn.execute(
        sql, pid, status, "at_x" if wip else None, "w1" if wip else None, lease if wip else None,
        created, updated if updated is not None else created, completed, receipts_json,
    )  # fmt: skip


async def add_bucket(conn, pid, worker, started_s, requests, jobs, version) -> None:
    await conn.execute(
        "INSERT INTO tracker_worker_claim_buckets (project_id, worker_id, bucket_started_at_ms,"
        " claim_requests, jobs_dispatched, policy_version) VALUES ($1, $2, $3, $4, $5, $6)",
        pid, worker, started_s * 1000, requests, jobs, version,
    )  # fmt: skip


RECEIPT = [{"receiver": "r1", "object_id": "o1", "checksum": "sha256:00", "size_bytes": 1,
            "accepted_at": NOW}]  # fmt: skip


async def build_known_state(conn) -> None:
    await add_project(conn, "alpha", qps=0.2, version=3)
    await add_project(conn, "beta", status="draining")
    await add_project(conn, "gamma")
    # alpha: three waiting jobs, the oldest enqueued two hours ago.
    for created in (NOW - 2 * HOUR, NOW - 60, NOW - 10):
        await add_job(conn, "alpha", "todo", created=created)
    # Leases: expired 5 s ago, expiring exactly now (expired: lease_expires_at <= now), live.
    for lease in (NOW - 5, NOW, NOW + 300):
        await add_job(conn, "alpha", "wip", lease=lease)
    recent = NOW - 100
    await add_job(conn, "alpha", "done", updated=recent, completed=recent, receipts=RECEIPT)
    await add_job(conn, "alpha", "done", updated=recent, completed=recent, receipts=RECEIPT * 2)
    await add_job(conn, "alpha", "done", updated=recent, completed=recent, receipts=[])
    await add_job(conn, "alpha", "done", updated=recent, completed=recent, receipts=None)
    await add_job(conn, "alpha", "done", updated=recent, completed=recent)  # SQL NULL
    old = NOW - 2 * HOUR
    await add_job(conn, "alpha", "done", updated=old, completed=old, receipts=RECEIPT)
    await add_job(conn, "alpha", "failed", updated=recent, completed=recent)
    # Exhausted by lease expiry: completed_at stays null, only updated_at moves.
    await add_job(conn, "alpha", "reset_exhausted", updated=NOW - 50)
    await add_job(conn, "alpha", "reset_exhausted", updated=old, completed=old)
    # beta: a done row exactly on the window's edge counts; two permanent failures.
    await add_job(conn, "beta", "wip", lease=NOW - 1)
    await add_job(conn, "beta", "done", updated=NOW - HOUR, completed=NOW - HOUR, receipts=[])
    await add_job(conn, "beta", "failed", updated=recent, completed=recent)
    await add_job(conn, "beta", "failed", updated=recent, completed=recent)
    await add_job(conn, "beta", "done", updated=NOW - HOUR - 1, completed=NOW - HOUR - 1)
    # Claim buckets (bucket window 15 min): alpha/w1 on the current policy and on an old one.
    await add_bucket(conn, "alpha", "w1", NOW - 60, 12, 30, 3)
    await add_bucket(conn, "alpha", "w1", NOW - 120, 10, 20, 3)
    await add_bucket(conn, "alpha", "w1", NOW - 600, 20, 64, 2)
    await add_bucket(conn, "alpha", "w2", NOW - 900, 5, 5, 3)  # on the edge: included
    await add_bucket(conn, "alpha", "w2", NOW - 960, 99, 99, 3)  # before the window
    # beta's limit was removed after these were written: reported, never flagged.
    await add_bucket(conn, "beta", "w3", NOW - 60, 100, 0, 1)


HISTORY_AT = NOW - 600 - NOW % 60


@pytest.fixture
async def known_db(pg_dsn: str) -> str:
    conn = await asyncpg.connect(pg_dsn)
    try:
        await build_known_state(conn)
        await conn.execute(  # a count snapshot 10 minutes before NOW (migration 0005)
            "INSERT INTO tracker_project_history VALUES ('alpha', $1, 9, 0, 1, 0, 0)", HISTORY_AT)
        # three resets (migration 0010's row trigger): never part of the job counts below
        await conn.execute(
            "UPDATE tracker_jobs SET reset_count = reset_count + 1 WHERE project_id = 'alpha'"
            " AND status = 'todo'")
        assert await conn.fetchval("SELECT sum(n) FROM tracker_job_count_deltas"
                                   " WHERE status = 'resets'") == 3
    finally:
        await conn.close()
    return pg_dsn


@pytest.fixture
async def store(known_db: str):
    store = await connect(known_db, ManualClock(NOW * 10**9), min_size=1, max_size=1)
    yield store
    await store.close()


async def test_monitor_report_in_a_known_state(store) -> None:
    report = await ops.monitor_report(store, window_s=HOUR, bucket_window_s=900, log_file=None)
    assert (report["generated_at"], report["window_seconds"], report["requests"]) == (
        NOW,
        HOUR,
        None,
    )
    alpha, beta, gamma = report["projects"]
    assert [p["project_id"] for p in (alpha, beta, gamma)] == ["alpha", "beta", "gamma"]
    assert alpha["job_counts"] == {
        "todo": 3,
        "wip": 3,
        "done": 6,
        "failed": 1,
        "reset_exhausted": 2,
    }
    assert (alpha["oldest_todo_age_seconds"], alpha["expired_wip"]) == (2 * HOUR, 2)
    assert (alpha["worker_claim_qps"], alpha["policy_version"]) == (0.2, 3)
    assert alpha["finished"] == {
        "done": 5, "failed": 1, "reset_exhausted": 1,
        "permanent_failure_rate": round(1 / 7, 4), "reset_exhausted_rate": round(1 / 7, 4),
        "done_with_receipts": 2, "receipt_bearing_rate": 0.4,
    }  # fmt: skip
    # issue 14: the same percent, rate and ETA as the progress route and the dashboard
    rate = 5 * 60 / (NOW - HISTORY_AT)
    assert alpha["percent_done"] == 40.0 and alpha["rate_per_minute"] == round(rate, 3)
    assert alpha["eta_seconds"] == round(6 / rate * 60)
    assert (beta["percent_done"], beta["rate_per_minute"], beta["eta_seconds"]) == (40.0, None, None)
    assert beta["status"] == "draining"
    assert beta["job_counts"] == {"todo": 0, "wip": 1, "done": 2, "failed": 2, "reset_exhausted": 0}
    assert (beta["oldest_todo_age_seconds"], beta["expired_wip"]) == (None, 1)
    assert beta["finished"]["permanent_failure_rate"] == round(2 / 3, 4)
    assert beta["finished"]["receipt_bearing_rate"] == 0.0
    assert gamma["job_counts"] == dict.fromkeys(ops.JOB_STATUSES, 0)
    assert gamma["finished"]["permanent_failure_rate"] is None
    assert gamma["finished"]["receipt_bearing_rate"] is None

    workers = {(w["project_id"], w["worker_id"], w["policy_version"]): w for w in report["workers"]}
    assert list(workers) == [
        ("alpha", "w1", 2),
        ("alpha", "w1", 3),
        ("alpha", "w2", 3),
        ("beta", "w3", 1),
    ]
    current = workers["alpha", "w1", 3]
    assert (current["buckets"], current["claim_requests"], current["jobs_dispatched"]) == (
        2,
        22,
        50,
    )
    assert (current["mean_claim_rps"], current["peak_claim_rps"]) == (round(22 / 120, 4), 0.2)
    assert (current["stale_policy"], current["over_limit"]) == (False, False)
    assert current["last_bucket_started_at_ms"] == (NOW - 60) * 1000
    old = workers["alpha", "w1", 2]
    assert (old["current_policy_version"], old["stale_policy"], old["over_limit"]) == (
        3,
        True,
        True,
    )
    assert workers["alpha", "w2", 3]["claim_requests"] == 5
    beta_w3 = workers["beta", "w3", 1]
    assert (beta_w3["worker_claim_qps"], beta_w3["over_limit"]) == (None, False)


async def test_monitor_window_options_change_the_figures(store) -> None:
    report = await ops.monitor_report(
        store, window_s=3 * HOUR, bucket_window_s=60, log_file=None
    )
    alpha = report["projects"][0]
    assert (alpha["finished"]["done"], alpha["finished"]["reset_exhausted"]) == (6, 2)
    assert alpha["finished"]["done_with_receipts"] == 3
    assert {(w["worker_id"], w["claim_requests"]) for w in report["workers"]} == {
        ("w1", 12),
        ("w3", 100),
    }


async def test_monitor_command_prints_json_and_tables(known_db: str, tmp_path, capsys) -> None:
    log = tmp_path / "tracker.log"
    log.write_text(
        json.dumps({"route": "/api/v1/projects/{project_id}/jobs/claim", "status": 429,
                    "project": "alpha", "retry_after_ms": 800, "latency_ms": 2}) + "\n"
    )  # fmt: skip
    await asyncio.to_thread(ops.monitor, database_url=known_db, json_output=True, log_file=log)
    report = json.loads(capsys.readouterr().out)
    assert [p["project_id"] for p in report["projects"]] == ["alpha", "beta", "gamma"]
    assert report["requests"]["projects"][0]["retry_after_ms"]["max"] == 800
    await asyncio.to_thread(ops.monitor, database_url=known_db)
    text = capsys.readouterr().out
    assert text.startswith("PROJECTS") and "\nalpha " in text and "WORKER CLAIM RATE" in text


async def test_monitor_is_read_only(known_db: str, store) -> None:
    conn = await asyncpg.connect(known_db)
    try:
        before = await conn.fetchval("SELECT count(*) FROM tracker_jobs WHERE status = 'wip'")
        await ops.monitor_report(store, window_s=HOUR, bucket_window_s=900, log_file=None)
        assert (
            await conn.fetchval("SELECT count(*) FROM tracker_jobs WHERE status = 'wip'") == before
        )
    finally:
        await conn.close()


async def bucket_starts(dsn: str) -> list[tuple[str, int]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT project_id, bucket_started_at_ms / 1000 AS s FROM tracker_worker_claim_buckets"
            " ORDER BY project_id, bucket_started_at_ms"
        )
        return [(r["project_id"], r["s"]) for r in rows]
    finally:
        await conn.close()


async def test_prune_deletes_only_buckets_older_than_the_cutoff(known_db: str, store) -> None:
    conn = await asyncpg.connect(known_db)
    try:
        await add_bucket(conn, "beta", "w3", NOW - 30 * DAY - 60, 1, 0, 1)  # older: deleted
        await add_bucket(conn, "gamma", "w4", NOW - 30 * DAY, 1, 0, 1)  # exactly at cutoff: kept
    finally:
        await conn.close()
    result = await ops.prune_report(store, now_s=NOW, older_than_s=30 * DAY)
    assert result == {"deleted": 1, "cutoff_ms": (NOW - 30 * DAY) * 1000}
    assert ("gamma", NOW - 30 * DAY) in await bucket_starts(known_db)
    # Everything before NOW - 10 min goes: alpha's 600/900/960-second-old rows included.
    result = await ops.prune_report(store, now_s=NOW, older_than_s=600)
    assert result["deleted"] == 3
    assert await bucket_starts(known_db) == [
        ("alpha", NOW - 600), ("alpha", NOW - 120), ("alpha", NOW - 60), ("beta", NOW - 60),
    ]  # fmt: skip
    assert (await ops.prune_report(store, now_s=NOW, older_than_s=600))["deleted"] == 0


async def test_prune_command_uses_the_wall_clock(pg_dsn: str, capsys) -> None:
    now = int(time.time())
    conn = await asyncpg.connect(pg_dsn)
    try:
        await add_project(conn, "p")
        await add_bucket(conn, "p", "w", now - now % 60 - 40 * DAY, 3, 0, 1)
        await add_bucket(conn, "p", "w", now - now % 60, 3, 0, 1)
    finally:
        await conn.close()
    await asyncio.to_thread(ops.prune_claim_buckets, database_url=pg_dsn, older_than="30d")
    assert capsys.readouterr().out == "deleted 1 claim bucket rows\n"
    assert await bucket_starts(pg_dsn) == [("p", now - now % 60)]
