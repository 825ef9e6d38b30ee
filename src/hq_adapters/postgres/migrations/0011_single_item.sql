-- Migration 0011: one-item forms of complete, fail and extend-lease (issue 12).
--
-- Most fleets send one job per complete/fail/extend request, and the batch statements' machinery
-- for many items was most of their executor start-up. tracker_*_one run the sql/worker_one.sql
-- blocks (verbatim, as test_generic_plans checks) under the same cached generic plans and plan
-- settings as migration 0006/0009's functions; the gated functions, which fold the worker gate
-- into the same round trip, call them for a batch of one and the batch functions otherwise.

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

-- $1 token digest, $2 project, $3 client version, then complete_op's $2..$7 and $9.
-- A batch of one runs tracker_complete_one, a larger one tracker_complete_op.
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
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
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
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
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
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
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
