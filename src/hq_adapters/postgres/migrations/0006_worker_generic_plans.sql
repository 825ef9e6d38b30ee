-- Migration 0006: the worker hot path's statements as PL/pgSQL functions whose statements run
-- under a cached generic plan (SET plan_cache_mode = force_generic_plan on each function).
--
-- Why: the pool plans every statement for its actual parameters (force_custom_plan, store.py),
-- which a large batch needs (a generic plan estimates unnest($n) at ten rows and can join the
-- batch items × items). At small batches planning was most of PostgreSQL's work: planning
-- claim_op_fifo, complete_op and the gate read cost ~0.35, ~0.3 and ~0.09 ms against ~0.2,
-- ~0.15 and ~0.02 ms of execution. A function's SET clause gives these statements their own
-- plan mode without any session state, so it also holds behind a transaction-mode pooler
-- (where client statements are unnamed and always planned afresh): PL/pgSQL keeps the plan per
-- server connection.
--
-- The adapter calls the op functions only for small batches (hq_adapters/postgres/worker.py,
-- GENERIC_PLAN_MAX_ITEMS) and the plain statements (custom plans) above that. Each op body is
-- the sql/worker_ops.sql block of the same name verbatim (tests/integration/test_sql_blocks.py
-- checks it against pg_proc), so a change to one of those blocks needs a migration that
-- replaces the function. tests/integration/test_generic_plans.py checks the generic plans'
-- shape (primary-key probes, the claim and expiry indexes, no scan of other rows).


CREATE OR REPLACE FUNCTION tracker_worker_gate(bytea, text)
RETURNS TABLE (user_id text, user_status text, user_roles text[], project tracker_projects)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
SELECT u.id, u.status, u.roles, p
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2;
END
$fn$;

-- sql/worker_ops.sql block claim_op_fifo, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT * FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT p.max_resets, LEAST($3, p.max_jobs_per_claim) AS lim FROM u, p
        WHERE u.status = 'active' AND 'worker' = ANY (u.roles) AND p.status = ANY ($10::text[])
          AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'fifo'
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $5, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     expired AS (
        SELECT job_id, created_at, reset_count, spec FROM tracker_jobs
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
        ORDER BY lease_expires_at, job_id
        LIMIT $9
        FOR UPDATE SKIP LOCKED
     ),
     todo AS (
        SELECT job_id, created_at FROM tracker_jobs
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND project_id = $1 AND status = 'todo'
          AND (cardinality($2::text[]) = 0 OR COALESCE(spec->>'type', 'seed') = ANY ($2::text[]))
        ORDER BY created_at, job_id
        LIMIT (SELECT COALESCE(max(lim), 0) FROM ok)
        FOR UPDATE SKIP LOCKED
     ),
     candidates AS (
        SELECT job_id, created_at FROM todo
        UNION ALL
        SELECT e.job_id, e.created_at FROM expired e, ok
        WHERE e.reset_count + 1 <= ok.max_resets
          AND (cardinality($2::text[]) = 0 OR COALESCE(e.spec->>'type', 'seed') = ANY ($2::text[]))
     ),
     picked AS (
        SELECT job_id, ord FROM (
            SELECT job_id, row_number() OVER (ORDER BY created_at, job_id) AS ord FROM candidates
        ) c
        WHERE ord <= (SELECT COALESCE(max(lim), 0) FROM ok)
     ),
     touched AS (
        SELECT COALESCE(e.job_id, k.job_id) AS job_id, e.job_id IS NOT NULL AS swept, k.ord
        FROM expired e FULL JOIN picked k ON k.job_id = e.job_id
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = CASE
                WHEN t.ord IS NOT NULL THEN 'wip'
                WHEN j.reset_count + 1 > ok.max_resets THEN 'reset_exhausted'
                ELSE 'todo' END,
            reset_count = CASE WHEN t.swept THEN j.reset_count + 1 ELSE j.reset_count END,
            last_worker_id = CASE WHEN t.swept THEN j.worker_id ELSE j.last_worker_id END,
            attempt_id = ($4::text[])[t.ord],
            worker_id = CASE WHEN t.ord IS NOT NULL THEN $5 END,
            lease_expires_at = CASE WHEN t.ord IS NOT NULL THEN $6::bigint END,
            updated_at = $7
        FROM touched t, ok
        WHERE j.job_id = t.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM touched))
        RETURNING t.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     )
SELECT EXISTS (SELECT 1 FROM ok) AS fast, pv.policy_version, c.*
FROM (SELECT 1) AS one
LEFT JOIN (SELECT policy_version FROM p) AS pv ON true
LEFT JOIN changed c ON c.ord IS NOT NULL
ORDER BY c.ord;
END
$fn$;

-- sql/worker_ops.sql block claim_op_random, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT * FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT p.max_resets, LEAST($3, p.max_jobs_per_claim) AS lim FROM u, p
        WHERE u.status = 'active' AND 'worker' = ANY (u.roles) AND p.status = ANY ($10::text[])
          AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'random'
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $5, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     expired AS (
        SELECT job_id, random_key, reset_count, spec FROM tracker_jobs
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
        ORDER BY lease_expires_at, job_id
        LIMIT $9
        FOR UPDATE SKIP LOCKED
     ),
     todo AS (
        SELECT job_id, random_key FROM tracker_jobs
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND project_id = $1 AND status = 'todo'
          AND (cardinality($2::text[]) = 0 OR COALESCE(spec->>'type', 'seed') = ANY ($2::text[]))
        ORDER BY random_key, job_id
        LIMIT (SELECT COALESCE(max(lim), 0) FROM ok)
        FOR UPDATE SKIP LOCKED
     ),
     candidates AS (
        SELECT job_id, random_key FROM todo
        UNION ALL
        SELECT e.job_id, e.random_key FROM expired e, ok
        WHERE e.reset_count + 1 <= ok.max_resets
          AND (cardinality($2::text[]) = 0 OR COALESCE(e.spec->>'type', 'seed') = ANY ($2::text[]))
     ),
     picked AS (
        SELECT job_id, ord FROM (
            SELECT job_id, row_number() OVER (ORDER BY random_key, job_id) AS ord FROM candidates
        ) c
        WHERE ord <= (SELECT COALESCE(max(lim), 0) FROM ok)
     ),
     touched AS (
        SELECT COALESCE(e.job_id, k.job_id) AS job_id, e.job_id IS NOT NULL AS swept, k.ord
        FROM expired e FULL JOIN picked k ON k.job_id = e.job_id
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = CASE
                WHEN t.ord IS NOT NULL THEN 'wip'
                WHEN j.reset_count + 1 > ok.max_resets THEN 'reset_exhausted'
                ELSE 'todo' END,
            reset_count = CASE WHEN t.swept THEN j.reset_count + 1 ELSE j.reset_count END,
            last_worker_id = CASE WHEN t.swept THEN j.worker_id ELSE j.last_worker_id END,
            attempt_id = ($4::text[])[t.ord],
            worker_id = CASE WHEN t.ord IS NOT NULL THEN $5 END,
            lease_expires_at = CASE WHEN t.ord IS NOT NULL THEN $6::bigint END,
            updated_at = $7
        FROM touched t, ok
        WHERE j.job_id = t.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM touched))
        RETURNING t.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     )
SELECT EXISTS (SELECT 1 FROM ok) AS fast, pv.policy_version, c.*
FROM (SELECT 1) AS one
LEFT JOIN (SELECT policy_version FROM p) AS pv ON true
LEFT JOIN changed c ON c.ord IS NOT NULL
ORDER BY c.ord;
END
$fn$;

-- sql/worker_ops.sql block complete_op, verbatim.
CREATE OR REPLACE FUNCTION tracker_complete_op(text, text, bigint[], text[], text[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE u.status = 'active' AND 'worker' = ANY (u.roles) AND p.status = ANY ($9::text[])
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
        SELECT DISTINCT ON (job_id, attempt_id) * FROM input ORDER BY job_id, attempt_id, ord
     ),
     locked_done AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND j.project_id = $1 AND j.worker_id = $2 AND j.lease_expires_at > $7
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
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status, max_resets FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT p.max_resets FROM u, p
        WHERE u.status = 'active' AND 'worker' = ANY (u.roles) AND p.status = ANY ($9::text[])
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
        SELECT DISTINCT ON (job_id, attempt_id) * FROM input ORDER BY job_id, attempt_id, ord
     ),
     locked_failed AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND j.project_id = $1 AND j.worker_id = $2 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = CASE
                WHEN NOT f.retryable THEN 'failed'
                WHEN j.reset_count + 1 > ok.max_resets THEN 'reset_exhausted'
                ELSE 'todo' END,
            reset_count = CASE WHEN f.retryable THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN NOT f.retryable OR j.reset_count + 1 > ok.max_resets THEN $7
                ELSE NULL END,
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
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $7),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE u.status = 'active' AND 'worker' = ANY (u.roles) AND p.status = ANY ($8::text[])
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
        SELECT DISTINCT ON (job_id, attempt_id) * FROM input ORDER BY job_id, attempt_id, ord
     ),
     locked_extended AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND j.project_id = $1 AND j.worker_id = $2 AND j.lease_expires_at > $5
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

-- The gate read and the operation in one round trip (tracker_gated_*): the gate row as
-- tracker_worker_gate returns it, and the operation's result only when the gate lets the
-- request through (hq_domain.worker.gate_passes: active worker whose id is an ID, existing
-- project, client version on its allowlist; the caller passes the project id only when it is
-- an ID). Otherwise ran = false and nothing is written: the API raises the gate's error.
-- The project travels as JSON text rather than as the tracker_projects composite: a client
-- caches a composite's layout, and a column added to the table later would make the first
-- call after it fail on the client after the operation had already run.
CREATE OR REPLACE FUNCTION tracker_gate_row(bytea, text, text)
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               passes boolean)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
SELECT u.id, u.status, u.roles, CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END,
       COALESCE(u.status = 'active' AND 'worker' = ANY (u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2;
END
$fn$;

-- $1 token digest, $2 project (NULL unless an ID), $3 client version, $4 claim order hint,
-- then claim_op_fifo's $2..$7, $9, $10 (accept, max_jobs, attempt ids, worker, lease end,
-- now, sweep bound, allowed statuses). One row; the jobs as arrays in claim order.
CREATE OR REPLACE FUNCTION tracker_gated_claim(
    bytea, text, text, text, text[], integer, text[], text, bigint, bigint, integer, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, fast boolean, policy_version bigint, job_ids bigint[],
               attempt_ids text[], leases bigint[], job_values text[], external_ids text[],
               specs text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
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
CREATE OR REPLACE FUNCTION tracker_gated_complete(
    bytea, text, text, text, bigint[], text[], text[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_complete_op($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    END IF;
END
$fn$;

-- $1 token digest, $2 project, $3 client version, then fail_op's $2..$7 and $9.
CREATE OR REPLACE FUNCTION tracker_gated_fail(
    bytea, text, text, text, bigint[], text[], boolean[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_fail_op($2, $4, $5, $6, $7, $8, $9, g.user_id, $10) AS c;
    END IF;
END
$fn$;

-- $1 token digest, $2 project, $3 client version, then extend_op's $2..$6 and $8.
CREATE OR REPLACE FUNCTION tracker_gated_extend(
    bytea, text, text, text, bigint[], text[], bigint, bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
    SELECT * INTO g FROM tracker_gate_row($1, $2, $3);
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, false,
            NULL::boolean, NULL::text[];
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, g.project, true,
            c.ok, c.job_statuses
        FROM tracker_extend_op($2, $4, $5, $6, $7, $8, g.user_id, $9) AS c;
    END IF;
END
$fn$;
