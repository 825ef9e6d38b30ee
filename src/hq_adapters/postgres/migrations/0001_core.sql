-- Migration 0001: the core schema, with the reference implementation's table and column names
-- (spec §2.12). Every statement is guarded so that it is a no-op on a database the reference
-- created (D7): tables are created only if absent, later columns are added only if missing,
-- and indexes are created by name only if absent.

CREATE TABLE IF NOT EXISTS tracker_users (
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
CREATE UNIQUE INDEX IF NOT EXISTS tracker_users_github_id_idx
    ON tracker_users (github_user_id) WHERE github_user_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS tracker_machine_tokens (
    user_id text PRIMARY KEY REFERENCES tracker_users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    token text,
    created_at bigint NOT NULL,
    revoked_at bigint
);
ALTER TABLE tracker_machine_tokens ADD COLUMN IF NOT EXISTS token text;

CREATE TABLE IF NOT EXISTS tracker_web_sessions (
    token_hash bytea PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS tracker_web_sessions_expiry_idx ON tracker_web_sessions (expires_at);

CREATE TABLE IF NOT EXISTS tracker_projects (
    id text PRIMARY KEY,
    status text NOT NULL CHECK (status IN ('active', 'draining', 'archived')),
    identity_mode text NOT NULL DEFAULT 'external_id'
        CHECK (identity_mode IN ('none', 'external_id', 'unique_value')),
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);
ALTER TABLE tracker_projects
    ADD COLUMN IF NOT EXISTS claim_order text NOT NULL DEFAULT 'fifo',
    ADD COLUMN IF NOT EXISTS dispatch_qps double precision,
    ADD COLUMN IF NOT EXISTS worker_claim_qps double precision,
    ADD COLUMN IF NOT EXISTS max_jobs_per_claim integer NOT NULL DEFAULT 256,
    ADD COLUMN IF NOT EXISTS policy_version bigint NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS dispatch_tokens double precision,
    ADD COLUMN IF NOT EXISTS dispatch_refilled_at_ns bigint,
    ADD COLUMN IF NOT EXISTS client_versions text[] NOT NULL DEFAULT '{}',
    ADD COLUMN IF NOT EXISTS max_resets integer NOT NULL DEFAULT 3,
    ADD COLUMN IF NOT EXISTS recommended_lease_seconds integer NOT NULL DEFAULT 300;

CREATE TABLE IF NOT EXISTS tracker_jobs (
    job_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
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
    CHECK ((status = 'wip' AND attempt_id IS NOT NULL AND worker_id IS NOT NULL
            AND lease_expires_at IS NOT NULL)
        OR (status <> 'wip' AND attempt_id IS NULL AND worker_id IS NULL
            AND lease_expires_at IS NULL))
);

-- An early reference schema called the receipts column warc_receipts: keep its rows.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'tracker_jobs'
                 AND column_name = 'warc_receipts')
       AND NOT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'tracker_jobs'
                 AND column_name = 'artifact_receipts') THEN
        ALTER TABLE tracker_jobs RENAME COLUMN warc_receipts TO artifact_receipts;
    END IF;
END
$$;
ALTER TABLE tracker_jobs ADD COLUMN IF NOT EXISTS artifact_receipts jsonb;

-- random_key: every row gets one; rows that predate the column get a uniform random key.
ALTER TABLE tracker_jobs ADD COLUMN IF NOT EXISTS random_key integer;
UPDATE tracker_jobs
SET random_key = floor(random() * 4294967296 - 2147483648)::integer
WHERE random_key IS NULL;
ALTER TABLE tracker_jobs ALTER COLUMN random_key SET NOT NULL;

CREATE UNIQUE INDEX IF NOT EXISTS tracker_jobs_external_id_uidx
    ON tracker_jobs (project_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS tracker_jobs_value_digest_uidx
    ON tracker_jobs (project_id, unique_value_digest) WHERE unique_value_digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS tracker_jobs_claim_idx
    ON tracker_jobs (project_id, created_at, job_id) WHERE status = 'todo';
CREATE INDEX IF NOT EXISTS tracker_jobs_claim_random_idx
    ON tracker_jobs (project_id, random_key, job_id) WHERE status = 'todo';
CREATE INDEX IF NOT EXISTS tracker_jobs_expired_idx
    ON tracker_jobs (project_id, lease_expires_at) WHERE status = 'wip';
-- D2: the background sweep looks for expired leases across all projects.
CREATE INDEX IF NOT EXISTS tracker_jobs_lease_sweep_idx
    ON tracker_jobs (lease_expires_at) WHERE status = 'wip';
-- Listings page by (project, job_id) with an optional status filter.
CREATE INDEX IF NOT EXISTS tracker_jobs_project_status_idx
    ON tracker_jobs (project_id, status, job_id);

CREATE TABLE IF NOT EXISTS tracker_worker_claim_buckets (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    worker_id text NOT NULL,
    bucket_started_at_ms bigint NOT NULL,
    claim_requests bigint NOT NULL DEFAULT 0 CHECK (claim_requests >= 0),
    jobs_dispatched bigint NOT NULL DEFAULT 0 CHECK (jobs_dispatched >= 0),
    policy_version bigint NOT NULL,
    PRIMARY KEY (project_id, worker_id, bucket_started_at_ms)
);

CREATE TABLE IF NOT EXISTS tracker_workers (
    worker_id text PRIMARY KEY,
    user_id text NOT NULL REFERENCES tracker_users (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS tracker_workers_user_idx ON tracker_workers (user_id);
