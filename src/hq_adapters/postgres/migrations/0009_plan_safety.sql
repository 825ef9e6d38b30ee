-- Migration 0009: generic plans that cannot leave the batch, whatever the statistics were when
-- a server connection made them (issue 12).
--
-- The worker functions of 0006 keep one generic plan per server connection, made at the
-- connection's first request from the statistics of that moment. A profile of B=1 workers on a
-- young database (never analysed; the planner guesses 0.5 % of the table per project) found
-- every complete reading all of its project's jobs: the lock scan `job_id = ANY ($3) AND
-- project_id = $1 AND …` ran on (project_id, status, job_id), whose only usable key is the
-- project, and a claim plan made on a nearly empty table read the table sequentially. Both
-- grow with the project, and the plan stays until something invalidates it.
--
-- What changes, each pinned by tests/integration/test_generic_plans.py (plans made on a
-- 16-row table, then run on a 20,000-row one; each case below failed there before):
-- * tracker_jobs_project_status_idx (project_id, status, job_id) goes: with status as a key
--   it matched the claim's `project_id = $1 AND status = 'todo'` as well as the claim index
--   did, so a plan could read the project's whole queue and sort it. Listings keep a
--   (project_id, job_id) index, partial on `project_id IS NOT NULL` (every row) so that only
--   statements naming the project can use it — not the UPDATEs that reach their rows by job
--   id, where a young plan would scan it whole for each id. The failure listings (recent
--   failures, ?status=failed|reset_exhausted) get a partial index of those rows.
-- * The lock scans of complete/fail/extend test the project as `(project_id = $1) IS TRUE`,
--   which no index can take: the batch's job ids on the primary key are their only way in
--   (with the project as an index key a plan read the project in job_id order and filtered
--   the ids). The three functions are replaced with their blocks as they now read.
-- * Every worker function plans without sequential or bitmap scans (per function, like its
--   plan_cache_mode, so no session state): each table it reads is reached through an index on
--   the request's keys, which is what the plans must do at any table size.
--
-- On a large table the two CREATE INDEX statements scan tracker_jobs inside the migration
-- transaction (writes wait): 4.4 s at 2M jobs here, so about 20 s per 10M.

DROP INDEX IF EXISTS tracker_jobs_project_status_idx;
CREATE INDEX IF NOT EXISTS tracker_jobs_project_job_idx
    ON tracker_jobs (project_id, job_id) WHERE project_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS tracker_jobs_failures_idx
    ON tracker_jobs (project_id, status, job_id) WHERE status IN ('failed', 'reset_exhausted');

ALTER FUNCTION tracker_worker_gate(bytea, text)
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_complete_op(text, text, bigint[], text[], text[], text[], bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_fail_op(text, text, bigint[], text[], boolean[], text[], bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_extend_op(text, text, bigint[], text[], bigint, bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gate_row(bytea, text, text)
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_claim(bytea, text, text, text, text[], integer, text[], text, bigint, bigint, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_complete(bytea, text, text, text, bigint[], text[], text[], text[], bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_fail(bytea, text, text, text, bigint[], text[], boolean[], text[], bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_extend(bytea, text, text, text, bigint[], text[], bigint, bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;

-- The lock scans of complete/fail/extend test the project as `(project_id = $1) IS TRUE`, which
-- no index can take, so the batch's job ids (the primary key) are their only way in: an index led
-- by project_id would otherwise let a plan read the project in job_id order and filter the ids
-- (test_generic_plans.py). Each function is its sql/worker_ops.sql block as it now reads.
-- sql/worker_ops.sql block complete_op, verbatim.
CREATE OR REPLACE FUNCTION tracker_complete_op(text, text, bigint[], text[], text[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, outcome, receipts, ord)
     ),
     firsts AS (
        SELECT f.*, ($5::text[])[f.ord] AS outcome, ($6::text[])[f.ord] AS receipts
        FROM tracker_rule_first_items($3::bigint[], $4::text[]) AS f
     ),
     locked_done AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = f.outcome::jsonb, artifact_receipts = f.receipts::jsonb,
            execution_error = NULL, updated_at = $7, completed_at = $7
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_done))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $7
        RETURNING f.ord, j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN done d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses;
END
$fn$;

-- sql/worker_ops.sql block fail_op, verbatim.
CREATE OR REPLACE FUNCTION tracker_fail_op(text, text, bigint[], text[], boolean[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status, max_resets FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT p.max_resets FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[], $5::boolean[], $6::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, retryable, error, ord)
     ),
     firsts AS (
        SELECT f.*, ($5::boolean[])[f.ord] AS retryable, ($6::text[])[f.ord] AS error
        FROM tracker_rule_first_items($3::bigint[], $4::text[]) AS f
     ),
     locked_failed AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets),
            reset_count = CASE WHEN f.retryable THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $7 END,
            execution_error = f.error::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $7
        FROM firsts f, ok
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_failed))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $7
        RETURNING f.ord, j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN failed d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses;
END
$fn$;

-- sql/worker_ops.sql block extend_op, verbatim.
CREATE OR REPLACE FUNCTION tracker_extend_op(text, text, bigint[], text[], bigint, bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $7),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($8::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $7 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $7)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, ord)
     ),
     firsts AS (
        SELECT * FROM tracker_rule_first_items($3::bigint[], $4::text[])
     ),
     locked_extended AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $5
        ORDER BY j.job_id
        FOR UPDATE
     ),
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $6), updated_at = $5
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_extended))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $5
        RETURNING f.ord, j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN extended d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses;
END
$fn$;
