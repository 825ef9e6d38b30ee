-- The schema the code expects: what the migration chain produces on an empty database
-- (tests/integration/test_migrations.py compares the two). Table and column names are the
-- reference implementation's (spec §2.12). Times are UNIX seconds unless named *_ns / *_ms.
-- The worker hot path's functions (migration 0006, replaced by 0008) are not repeated here:
-- their bodies are the sql/worker_ops.sql blocks (tests/integration/test_generic_plans.py
-- compares them). The rule functions those blocks call (migration 0008) are, at the end.

CREATE TABLE tracker_schema_migrations (
    version bigint PRIMARY KEY,
    applied_at bigint NOT NULL
);

CREATE TABLE tracker_users (
    id text PRIMARY KEY,
    status text NOT NULL CHECK (status IN ('pending', 'active', 'suspended')),
    roles text[] NOT NULL DEFAULT '{}',
    github_user_id bigint,
    github_login text,
    github_avatar_url text,
    last_login_at bigint,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX tracker_users_github_id_idx
    ON tracker_users (github_user_id) WHERE github_user_id IS NOT NULL;

-- token_hash = SHA-256("saveweb-machine-token-v1\0" + token); token = plaintext for re-display.
CREATE TABLE tracker_machine_tokens (
    user_id text PRIMARY KEY REFERENCES tracker_users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    token text,
    created_at bigint NOT NULL,
    revoked_at bigint
);

CREATE TABLE tracker_web_sessions (
    token_hash bytea PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);
CREATE INDEX tracker_web_sessions_expiry_idx ON tracker_web_sessions (expires_at);

-- dispatch_tokens / dispatch_refilled_at_ns: the dispatch bucket, both NULL when unset.
CREATE TABLE tracker_projects (
    id text PRIMARY KEY,
    status text NOT NULL CHECK (status IN ('active', 'draining', 'archived')),
    identity_mode text NOT NULL DEFAULT 'external_id'
        CHECK (identity_mode IN ('none', 'external_id', 'unique_value')),
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    claim_order text NOT NULL DEFAULT 'fifo',
    dispatch_qps double precision,
    worker_claim_qps double precision,
    max_jobs_per_claim integer NOT NULL DEFAULT 256,
    policy_version bigint NOT NULL DEFAULT 1,
    dispatch_tokens double precision,
    dispatch_refilled_at_ns bigint,
    client_versions text[] NOT NULL DEFAULT '{}',
    max_resets integer NOT NULL DEFAULT 3,
    recommended_lease_seconds integer NOT NULL DEFAULT 300
);

-- artifact_receipts: SQL NULL = never set (reads as []), JSON null = a completion stored null.
-- project_id names an existing project and goes with it, like the reference's foreign key with
-- ON DELETE CASCADE, but checked once per statement by the count triggers (migration 0012).
CREATE TABLE tracker_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id text NOT NULL,
    external_id text,
    value text NOT NULL,
    unique_value_digest bytea,
    spec jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL CHECK (status IN ('todo', 'wip', 'done', 'failed', 'reset_exhausted')),
    attempt_id text,
    worker_id text,
    lease_expires_at bigint,
    reset_count integer NOT NULL DEFAULT 0 CHECK (reset_count >= 0),
    outcome jsonb,
    execution_error jsonb,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    completed_at bigint,
    artifact_receipts jsonb,
    random_key integer NOT NULL,
    last_worker_id text,  -- 0007: the worker of the last finished or expired attempt (dashboard)
    CHECK ((status = 'wip' AND attempt_id IS NOT NULL AND worker_id IS NOT NULL
            AND lease_expires_at IS NOT NULL)
        OR (status <> 'wip' AND attempt_id IS NULL AND worker_id IS NULL
            AND lease_expires_at IS NULL))
);
CREATE UNIQUE INDEX tracker_jobs_external_id_uidx
    ON tracker_jobs (project_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX tracker_jobs_value_digest_uidx
    ON tracker_jobs (project_id, unique_value_digest) WHERE unique_value_digest IS NOT NULL;
CREATE INDEX tracker_jobs_claim_idx
    ON tracker_jobs (project_id, created_at, job_id) WHERE status = 'todo';
CREATE INDEX tracker_jobs_claim_random_idx
    ON tracker_jobs (project_id, random_key, job_id) WHERE status = 'todo';
CREATE INDEX tracker_jobs_expired_order_idx
    ON tracker_jobs (project_id, lease_expires_at, job_id) WHERE status = 'wip';
CREATE INDEX tracker_jobs_lease_sweep_order_idx
    ON tracker_jobs (lease_expires_at, job_id) WHERE status = 'wip';
CREATE INDEX tracker_jobs_project_job_idx
    ON tracker_jobs (project_id, job_id) WHERE project_id IS NOT NULL;
CREATE INDEX tracker_jobs_failures_idx
    ON tracker_jobs (project_id, status, job_id) WHERE status IN ('failed', 'reset_exhausted');

CREATE TABLE tracker_worker_claim_buckets (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    worker_id text NOT NULL,
    bucket_started_at_ms bigint NOT NULL,
    claim_requests bigint NOT NULL DEFAULT 0 CHECK (claim_requests >= 0),
    jobs_dispatched bigint NOT NULL DEFAULT 0 CHECK (jobs_dispatched >= 0),
    policy_version bigint NOT NULL,
    PRIMARY KEY (project_id, worker_id, bucket_started_at_ms)
);

CREATE TABLE tracker_workers (
    worker_id text PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users (id) ON DELETE CASCADE
);
CREATE INDEX tracker_workers_user_idx ON tracker_workers (user_id);

-- Job counts: folded totals per (project, status) plus signed deltas appended by statement
-- triggers on tracker_jobs and folded by the server's background loop; a project's count is
-- the sum over both (migration 0004 holds the functions and triggers and explains the design).
CREATE TABLE tracker_job_counts (
    project_id text NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (project_id, status)
);
CREATE TABLE tracker_job_count_deltas (
    project_id text NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL
);

-- Per-minute snapshots of the job counts and the running total of resets (migrations 0005,
-- 0010; hq_domain.progress has the rules). tracker_job_counts also holds that total, as the
-- pseudo-status 'resets' (a row trigger of migration 0010).
CREATE TABLE tracker_project_history (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    minute_s bigint NOT NULL,
    todo bigint NOT NULL,
    wip bigint NOT NULL,
    done bigint NOT NULL,
    failed bigint NOT NULL,
    reset_exhausted bigint NOT NULL,
    resets bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, minute_s)
);

-- Jobs done and failed per worker and minute, flushed from each server process's memory by
-- its background loop (migration 0010).
CREATE TABLE tracker_worker_minutes (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    worker_id text NOT NULL,
    minute_s bigint NOT NULL,
    done bigint NOT NULL,
    failed bigint NOT NULL,
    PRIMARY KEY (project_id, minute_s, worker_id)
);
CREATE INDEX tracker_worker_minutes_minute_idx ON tracker_worker_minutes (minute_s);

-- The rules SQL evaluates inside a statement, one inlinable function each (migration 0008
-- explains them; tests/integration/test_rule_agreement.py ties each to its hq_domain function).
-- hq_domain.users.is_active_worker: the worker routes' user check.
CREATE OR REPLACE FUNCTION tracker_rule_active_worker(status text, roles text[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
SELECT status = 'active' AND 'worker' = ANY (roles)
$fn$;

-- hq_domain.jobs.job_type: a job's type for claims and filters, `seed` when its spec has none.
CREATE OR REPLACE FUNCTION tracker_rule_job_type(spec jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
SELECT COALESCE(spec->>'type', 'seed')
$fn$;

-- hq_domain.jobs.type_accepted: a claim's accept_types filter (empty accepts every type).
CREATE OR REPLACE FUNCTION tracker_rule_type_accepted(spec jsonb, accept_types text[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
SELECT cardinality(accept_types) = 0 OR tracker_rule_job_type(spec) = ANY (accept_types)
$fn$;

-- hq_domain.lifecycle.after_reset: the status after a reset (retryable failure or lease
-- expiry), reset_exhausted once reset_count + 1 exceeds max_resets.
CREATE OR REPLACE FUNCTION tracker_rule_reset_status(reset_count integer, max_resets integer)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
SELECT CASE WHEN reset_count + 1 > max_resets THEN 'reset_exhausted' ELSE 'todo' END
$fn$;

-- hq_domain.lifecycle.fail: the status an applied failure leaves (failed, or a reset).
CREATE OR REPLACE FUNCTION tracker_rule_fail_status(
    retryable boolean, reset_count integer, max_resets integer)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
SELECT CASE WHEN retryable THEN tracker_rule_reset_status(reset_count, max_resets)
            ELSE 'failed' END
$fn$;

-- hq_domain.lifecycle.first_items: the items of a complete/fail/extend batch that may apply,
-- the first occurrence of each (job_id, attempt_id) pair (a repeat is rejected), with their
-- 1-based positions (ord) in the batch.
CREATE OR REPLACE FUNCTION tracker_rule_first_items(job_ids bigint[], attempt_ids text[])
RETURNS TABLE (job_id bigint, attempt_id text, ord bigint)
LANGUAGE sql IMMUTABLE AS $fn$
SELECT DISTINCT ON (i.job_id, i.attempt_id) i.job_id, i.attempt_id, i.ord
FROM unnest(job_ids, attempt_ids) WITH ORDINALITY AS i(job_id, attempt_id, ord)
ORDER BY i.job_id, i.attempt_id, i.ord
$fn$;

-- hq_domain.users.roles_after_admin_login: an admin-team sign-in adds admin to the roles,
-- sorted by code point and unique.
CREATE OR REPLACE FUNCTION tracker_rule_admin_login_roles(roles text[])
RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$
SELECT ARRAY(SELECT DISTINCT r COLLATE "C" FROM unnest(roles || '{admin}'::text[]) AS r
             ORDER BY 1)
$fn$;
