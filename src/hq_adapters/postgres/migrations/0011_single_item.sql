-- Migration 0011: cheaper small worker requests (issue 12).
--
-- 1. One-item forms of complete, fail and extend-lease. Most fleets send one job per request,
-- and the batch statements' machinery for many items (the input list, first-occurrence dedup,
-- an ordered lock scan, the per-item result join) was most of their executor start-up.
-- tracker_*_one run the sql/worker_one.sql blocks (verbatim, as test_generic_plans checks)
-- under the same cached generic plans and plan settings as the batch functions (0006, 0009).
--
-- 2. The gated functions (the worker gate and the operation in one round trip) read the gate
-- with the sql/worker_one.sql block gate_row written into them, instead of calling
-- tracker_gate_row: the call cost as much again as the query (benchmarks/notes/optimisations.md).
-- They run the one-item form for a batch of one and the batch function otherwise.
-- tracker_gate_row has no caller left and is dropped.

-- sql/worker_one.sql block complete_one, verbatim.
CREATE OR REPLACE FUNCTION tracker_complete_one(text, text, bigint[], text[], text[], text[], bigint, text, text[])
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
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = ($5::text[])[1]::jsonb, artifact_receipts = ($6::text[])[1]::jsonb,
            execution_error = NULL, updated_at = $7, completed_at = $7
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        RETURNING j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM done d)] AS job_statuses;
END
$fn$;

-- sql/worker_one.sql block fail_one, verbatim.
CREATE OR REPLACE FUNCTION tracker_fail_one(text, text, bigint[], text[], boolean[], text[], bigint, text, text[])
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
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(($5::boolean[])[1], j.reset_count, ok.max_resets),
            reset_count = CASE WHEN ($5::boolean[])[1] THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(($5::boolean[])[1], j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $7 END,
            execution_error = ($6::text[])[1]::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $7
        FROM ok
        WHERE (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        RETURNING j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM failed d)] AS job_statuses;
END
$fn$;

-- sql/worker_one.sql block extend_one, verbatim.
CREATE OR REPLACE FUNCTION tracker_extend_one(text, text, bigint[], text[], bigint, bigint, text, text[])
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
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $6), updated_at = $5
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $5
        RETURNING j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM extended d)] AS job_statuses;
END
$fn$;

-- $1 token digest, $2 project (NULL unless an ID), $3 client version, $4 claim order hint,
-- then claim_op_fifo's $2..$7, $9, $10 (accept, max_jobs, attempt ids, worker, lease end,
-- now, sweep bound, allowed statuses). One row; the jobs as arrays in claim order.
-- sql/worker_one.sql block gate_row, verbatim.
CREATE OR REPLACE FUNCTION tracker_gated_claim(
    bytea, text, text, text, text[], integer, text[], text, bigint, bigint, integer, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, fast boolean, policy_version bigint, job_ids bigint[],
               attempt_ids text[], leases bigint[], job_values text[], external_ids text[],
               specs text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM (
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END AS project,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2
    ) AS gate;
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::bigint, NULL::bigint[], NULL::text[], NULL::bigint[],
            NULL::text[], NULL::text[], NULL::text[];
    ELSIF $4 = 'random' THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            bool_and(c.fast), max(c.policy_version),
            array_agg(c.job_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.attempt_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.lease_expires_at ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.value ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.external_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.spec ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL)
        FROM tracker_claim_op_random($2, $5, $6, $7, $8, $9, $10, g.user_id, $11, $12) AS c;
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            bool_and(c.fast), max(c.policy_version),
            array_agg(c.job_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.attempt_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.lease_expires_at ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.value ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.external_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.spec ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL)
        FROM tracker_claim_op_fifo($2, $5, $6, $7, $8, $9, $10, g.user_id, $11, $12) AS c;
    END IF;
END
$fn$;

-- $1 token digest, $2 project, $3 client version, then complete_op's $2..$7 and $9.
-- A batch of one runs tracker_complete_one, a larger one tracker_complete_op.
-- sql/worker_one.sql block gate_row, verbatim.
CREATE OR REPLACE FUNCTION tracker_gated_complete(
    bytea, text, text, text, bigint[], text[], text[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM (
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END AS project,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2
    ) AS gate;
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_complete_one($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_complete_op($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    END IF;
END
$fn$;

-- $1 token digest, $2 project, $3 client version, then fail_op's $2..$7 and $9.
-- A batch of one runs tracker_fail_one, a larger one tracker_fail_op.
-- sql/worker_one.sql block gate_row, verbatim.
CREATE OR REPLACE FUNCTION tracker_gated_fail(
    bytea, text, text, text, bigint[], text[], boolean[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM (
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END AS project,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2
    ) AS gate;
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_fail_one($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_fail_op($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    END IF;
END
$fn$;

-- $1 token digest, $2 project, $3 client version, then extend_op's $2..$6 and $8.
-- A batch of one runs tracker_extend_one, a larger one tracker_extend_op.
-- sql/worker_one.sql block gate_row, verbatim.
CREATE OR REPLACE FUNCTION tracker_gated_extend(
    bytea, text, text, text, bigint[], text[], bigint, bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM (
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END AS project,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2
    ) AS gate;
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_extend_one($2, $4, $5, $6, $7, $8, g.user_id, $9) AS c;
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_extend_op($2, $4, $5, $6, $7, $8, g.user_id, $9) AS c;
    END IF;
END
$fn$;

DROP FUNCTION IF EXISTS tracker_gate_row(bytea, text, text);
