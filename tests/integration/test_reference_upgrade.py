"""D7: a database laid out and filled by the reference implementation (spec §2.12) is upgraded
in place by our migrations, keeps every row, and is served correctly by PostgresStore."""

from __future__ import annotations

import hashlib
import json

import asyncpg
import pytest

from hq_adapters.postgres import PostgresStore, migrate
from hq_adapters.postgres.migrate import VERSION_BASE, migrations
from hq_domain.clock import ManualClock
from hq_domain.jobs import JobSpec, JobStatus
from hq_domain.worker import ClaimRequest

pytestmark = pytest.mark.postgres

NOW = 1_750_000_000
BOB_TOKEN = "hq_" + "b" * 43
ALICE_TOKEN = "hq_" + "a" * 43
SESSION = "s" * 43

# The reference layout, written independently of our migrations: its own migration history,
# an extra project CHECK and a differently named random-order claim index.
REFERENCE_DDL = """
CREATE TABLE tracker_schema_migrations (version bigint PRIMARY KEY, applied_at bigint NOT NULL);
CREATE TABLE tracker_users (
    id text PRIMARY KEY, status text NOT NULL, roles text[] NOT NULL DEFAULT '{}',
    github_user_id bigint, github_login text, github_avatar_url text, last_login_at bigint,
    created_at bigint NOT NULL, updated_at bigint NOT NULL);
CREATE UNIQUE INDEX tracker_users_github_id_idx ON tracker_users(github_user_id)
    WHERE github_user_id IS NOT NULL;
CREATE TABLE tracker_machine_tokens (
    user_id text PRIMARY KEY REFERENCES tracker_users(id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE, token text, created_at bigint NOT NULL, revoked_at bigint);
CREATE TABLE tracker_web_sessions (
    token_hash bytea PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users(id) ON DELETE CASCADE,
    created_at bigint NOT NULL, expires_at bigint NOT NULL);
CREATE TABLE tracker_projects (
    id text PRIMARY KEY, status text NOT NULL, identity_mode text NOT NULL DEFAULT 'external_id',
    claim_order text NOT NULL DEFAULT 'fifo', dispatch_qps double precision,
    worker_claim_qps double precision, max_jobs_per_claim integer NOT NULL DEFAULT 256,
    policy_version bigint NOT NULL DEFAULT 1, dispatch_tokens double precision,
    dispatch_refilled_at_ns bigint, client_versions text[] NOT NULL DEFAULT '{}',
    max_resets integer NOT NULL DEFAULT 3, recommended_lease_seconds integer NOT NULL DEFAULT 300,
    created_at bigint NOT NULL, updated_at bigint NOT NULL,
    CONSTRAINT tracker_projects_policy_version_check CHECK (policy_version > 0));
CREATE TABLE tracker_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id text NOT NULL REFERENCES tracker_projects(id) ON DELETE CASCADE,
    external_id text, value text NOT NULL, unique_value_digest bytea,
    random_key integer NOT NULL, spec jsonb NOT NULL DEFAULT '{}', status text NOT NULL,
    attempt_id text, worker_id text, lease_expires_at bigint,
    reset_count integer NOT NULL DEFAULT 0 CHECK (reset_count >= 0),
    outcome jsonb, artifact_receipts jsonb, execution_error jsonb,
    created_at bigint NOT NULL, updated_at bigint NOT NULL, completed_at bigint);
CREATE UNIQUE INDEX tracker_jobs_external_id_uidx ON tracker_jobs(project_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX tracker_jobs_value_digest_uidx ON tracker_jobs(project_id, unique_value_digest)
    WHERE unique_value_digest IS NOT NULL;
CREATE INDEX tracker_jobs_claim_idx ON tracker_jobs(project_id, created_at, job_id)
    WHERE status = 'todo';
CREATE INDEX tracker_jobs_random_claim_idx ON tracker_jobs(project_id, random_key, job_id)
    WHERE status = 'todo';
CREATE TABLE tracker_worker_claim_buckets (
    project_id text NOT NULL REFERENCES tracker_projects(id) ON DELETE CASCADE,
    worker_id text NOT NULL, bucket_started_at_ms bigint NOT NULL,
    claim_requests bigint NOT NULL DEFAULT 0, jobs_dispatched bigint NOT NULL DEFAULT 0,
    policy_version bigint NOT NULL,
    PRIMARY KEY (project_id, worker_id, bucket_started_at_ms));
CREATE TABLE tracker_workers (
    worker_id text PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users(id) ON DELETE CASCADE,
    last_seen_at bigint NOT NULL);
INSERT INTO tracker_schema_migrations VALUES (1, 1700000000), (2, 1700000000), (3, 1700000000),
    (4, 1700000000), (5, 1700000000), (6, 1700000000), (7, 1700000000), (8, 1700000000);
"""

TABLES = [
    "tracker_schema_migrations", "tracker_users", "tracker_machine_tokens",
    "tracker_web_sessions", "tracker_projects", "tracker_jobs",
    "tracker_worker_claim_buckets", "tracker_workers",
]


def token_digest(token: str) -> bytes:
    return hashlib.sha256(b"saveweb-machine-token-v1\x00" + token.encode()).digest()


def session_digest(token: str) -> bytes:
    return hashlib.sha256(b"saveweb-web-session-v1\x00" + token.encode()).digest()


async def fill(conn: asyncpg.Connection) -> None:
    t = NOW - 1000
    await conn.executemany(
        "INSERT INTO tracker_users VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
        [
            ("alice", "active", ["admin"], None, None, None, None, t),
            ("bob", "active", ["worker"], 42, "bob", "https://avatars/b", t, t),
            ("carol", "pending", ["worker"], 43, "carol", None, t, t),
        ],
    )
    await conn.executemany(
        "INSERT INTO tracker_machine_tokens VALUES ($1, $2, $3, $4, $5)",
        [
            ("bob", token_digest(BOB_TOKEN), BOB_TOKEN, t, None),
            ("alice", token_digest(ALICE_TOKEN), ALICE_TOKEN, t, t + 1),
        ],
    )
    await conn.execute(
        "INSERT INTO tracker_web_sessions VALUES ($1, 'bob', $2, $3)",
        session_digest(SESSION), t, NOW + 3600,
    )
    await conn.execute(
        """INSERT INTO tracker_projects (id, status, identity_mode, claim_order, dispatch_qps,
               worker_claim_qps, policy_version, dispatch_tokens, dispatch_refilled_at_ns,
               client_versions, max_resets, created_at, updated_at)
           VALUES ('p1', 'active', 'external_id', 'fifo', NULL, 1.0, 3, NULL, NULL,
                   '{v1,v2}', 1, $1, $1),
                  ('p2', 'draining', 'unique_value', 'random', 5.0, NULL, 1, 0.5, $2,
                   '{}', 3, $1, $1)""",
        t, (NOW - 10) * 10**9,
    )
    jobs = [
        # project, ext, value, digest, key, spec, status, attempt, worker, lease, resets,
        # outcome, receipts, error, completed
        ("p1", "todo1", "https://t/1", None, 5, {"type": "seed"}, "todo",
         None, None, None, 0, None, None, None, None),
        ("p1", "exp", "https://t/2", None, 6, {}, "wip", "at_old", "w1", NOW - 5, 1,
         None, None, None, None),
        ("p1", "live", "https://t/3", None, 7, {"type": "asset", "hops": 2}, "wip", "at_live",
         "w1", NOW + 500, 0, None, None, None, None),
        ("p1", "done1", "https://t/4", None, 8, {}, "done", None, None, None, 0,
         {"kind": "success", "code": 200, "uri": None, "meta": None},
         [{"id": "r", "issuer": "i", "object_id": "o", "checksum": "c", "size_bytes": 1,
           "accepted_at": 2}], None, t),
        ("p1", "done-null", "https://t/5", None, 9, {}, "done", None, None, None, 0,
         {"kind": "skipped", "code": None, "uri": None, "meta": None}, "null", None, t),
        ("p1", "failed1", "https://t/6", None, 10, {}, "failed", None, None, None, 0, None,
         None, {"code": "x", "message": "m", "details": None}, t),
        ("p1", "exh", "https://t/7", None, 11, {}, "reset_exhausted", None, None, None, 2,
         None, None, None, None),
        ("p2", None, "https://u/1", hashlib.sha256(b"https://u/1").digest(), -3, {}, "todo",
         None, None, None, 0, None, None, None, None),
    ]
    await conn.executemany(
        """INSERT INTO tracker_jobs (project_id, external_id, value, unique_value_digest,
               random_key, spec, status, attempt_id, worker_id, lease_expires_at, reset_count,
               outcome, artifact_receipts, execution_error, completed_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12::jsonb, $13::jsonb,
                   $14::jsonb, $15, $16, $16)""",
        [
            (*j[:5], json.dumps(j[5]), *j[6:11],
             None if j[11] is None else json.dumps(j[11]),
             None if j[12] is None else (j[12] if isinstance(j[12], str) else json.dumps(j[12])),
             None if j[13] is None else json.dumps(j[13]), j[14], t + i)
            for i, j in enumerate(jobs)
        ],
    )
    await conn.execute(
        "INSERT INTO tracker_worker_claim_buckets VALUES ('p1', 'w1', 1749999960000, 4, 7, 3)"
    )
    await conn.execute(
        "INSERT INTO tracker_workers VALUES ('w1', 'bob', $1), ('w2', 'carol', $1)", t
    )


async def snapshot(conn: asyncpg.Connection) -> dict[str, list[dict]]:
    out = {}
    for table in TABLES:
        rows = await conn.fetch(f"SELECT * FROM {table}")  # test-only, fixed table names
        out[table] = sorted((dict(r) for r in rows), key=repr)
    return out


@pytest.fixture
async def reference_db(pg_databases):
    dsn = await pg_databases.create("ref")
    conn = await asyncpg.connect(dsn)
    await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    await conn.execute(REFERENCE_DDL)
    await fill(conn)
    yield dsn, conn
    await conn.close()
    await pg_databases.drop(dsn)


async def test_rows_survive_and_history_is_kept(reference_db) -> None:
    _dsn, conn = reference_db
    before = await snapshot(conn)
    applied = await migrate(conn, NOW)
    assert applied == [m.name for m in migrations()]
    after = await snapshot(conn)
    ours = [r for r in after["tracker_schema_migrations"] if r["version"] > VERSION_BASE]
    assert len(ours) == len(migrations())
    after["tracker_schema_migrations"] = [
        r for r in after["tracker_schema_migrations"] if r["version"] <= VERSION_BASE
    ]
    # Columns our migrations add start NULL on old rows (0007 tracker_jobs.last_worker_id),
    # except 0016's random_queue: every old row stays in the random claim index.
    started = {("tracker_jobs", "random_queue"): True}
    for table, rows in after.items():
        for row in rows:
            for added in set(row) - {k for r in before[table] for k in r}:
                assert row.pop(added) is started.get((table, added)), (table, added)
    assert after == before
    assert await migrate(conn, NOW + 1) == []  # idempotent on the upgraded database
    assert await snapshot(conn) == await snapshot(conn)


async def test_upgraded_database_is_served(reference_db) -> None:
    dsn, conn = reference_db
    await migrate(conn, NOW)
    clock = ManualClock(NOW * 10**9)
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    store = PostgresStore(pool, clock)
    try:
        bob = await store.principal_for_token(BOB_TOKEN)
        assert bob is not None and bob.user_id == "bob" and bob.is_active_worker
        assert await store.principal_for_token(ALICE_TOKEN) is None  # revoked stays revoked
        assert await store.get_machine_token("bob") == BOB_TOKEN
        assert (await store.session_user(session_digest(SESSION))).id == "bob"

        p1 = await store.get_project("p1")
        assert p1.job_counts.as_dict() == {
            "todo": 1, "wip": 2, "done": 2, "failed": 1, "reset_exhausted": 1,
        }
        assert p1.project.client_versions == ("v1", "v2") and p1.project.policy_version == 3
        p2 = (await store.get_project("p2")).project
        assert (p2.dispatch_tokens, p2.claim_order.value) == (0.5, "random")

        jobs = {j.external_id: j for j in (await store.list_jobs("p1", None, 0, 200)).jobs}
        assert jobs["done1"].artifact_receipts[0]["object_id"] == "o"
        assert jobs["done-null"].artifact_receipts is None
        assert jobs["todo1"].artifact_receipts == []
        assert jobs["live"].spec == {"type": "asset", "hops": 2}

        # The expired lease is swept by the claim (max_resets 1: second reset exhausts it),
        # the todo row is handed out, the live one is untouched.
        # (a new worker id: its mapping row needs the reference's last_seen_at NOT NULL)
        result = await store.claim("bob", "p1", ClaimRequest("w3", 10, 60, (), 3))
        assert [j.external_id for j in result.jobs] == ["todo1"]
        assert (await store.get_job("p1", jobs["exp"].job_id)).status is JobStatus.RESET_EXHAUSTED
        assert (await store.get_job("p1", jobs["live"].job_id)).attempt_id == "at_live"

        await store.requeue_job("p1", jobs["failed1"].job_id)
        assert await store.enqueue("p1", [JobSpec("https://t/4", id="done1")]) == 0
        assert await store.enqueue("p1", [JobSpec("https://t/8", id="new")]) == 1
        assert await store.enqueue("p2", [JobSpec("https://u/1")]) == 0
        new = (await store.list_jobs("p1", None, jobs["exh"].job_id, 10)).jobs
        assert [j.external_id for j in new] == ["new"]  # identity continues after old rows
        assert [m.user_id for m in await store.list_worker_mappings("w2", 10)] == ["carol"]
        assert [m.user_id for m in await store.list_worker_mappings("w3", 10)] == ["bob"]
    finally:
        await store.close()


EARLY_DDL = """
CREATE TABLE tracker_schema_migrations (version bigint PRIMARY KEY, applied_at bigint NOT NULL);
CREATE TABLE tracker_users (id text PRIMARY KEY, status text NOT NULL,
    roles text[] NOT NULL DEFAULT '{}', github_user_id bigint, github_login text,
    github_avatar_url text, last_login_at bigint, created_at bigint NOT NULL,
    updated_at bigint NOT NULL);
CREATE TABLE tracker_projects (id text PRIMARY KEY, status text NOT NULL,
    identity_mode text NOT NULL DEFAULT 'external_id',
    created_at bigint NOT NULL, updated_at bigint NOT NULL);
CREATE TABLE tracker_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id text NOT NULL REFERENCES tracker_projects(id) ON DELETE CASCADE,
    external_id text, value text NOT NULL, unique_value_digest bytea,
    spec jsonb NOT NULL DEFAULT '{}', status text NOT NULL, attempt_id text, worker_id text,
    lease_expires_at bigint, reset_count integer NOT NULL DEFAULT 0, outcome jsonb,
    warc_receipts jsonb, execution_error jsonb, created_at bigint NOT NULL,
    updated_at bigint NOT NULL, completed_at bigint);
INSERT INTO tracker_schema_migrations VALUES (1, 1700000000);
INSERT INTO tracker_projects VALUES ('old', 'active', 'external_id', 1, 1);
INSERT INTO tracker_jobs (project_id, external_id, value, status, warc_receipts,
    outcome, created_at, updated_at, completed_at)
VALUES ('old', 'a', 'https://a/', 'todo', NULL, NULL, 1, 1, NULL),
       ('old', 'b', 'https://b/', 'done', '[{"id": "w"}]', '{"kind": "success"}', 1, 1, 2);
"""


async def test_early_reference_layout_gains_the_later_columns(pg_databases) -> None:
    dsn = await pg_databases.create("early")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        await conn.execute(EARLY_DDL)
        await migrate(conn, NOW)
        rows = await conn.fetch(
            "SELECT external_id, random_key, artifact_receipts::text AS r FROM tracker_jobs"
            " ORDER BY job_id"
        )
        assert [r["external_id"] for r in rows] == ["a", "b"]
        assert all(r["random_key"] is not None for r in rows)
        assert rows[1]["r"] == '[{"id": "w"}]'
        project = await conn.fetchrow("SELECT * FROM tracker_projects")
        assert (project["claim_order"], project["max_resets"], project["policy_version"]) == (
            "fifo", 3, 1,
        )
    finally:
        await conn.close()
        await pg_databases.drop(dsn)
