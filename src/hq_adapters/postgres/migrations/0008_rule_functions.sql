-- Migration 0008: the rules SQL evaluates inside its statements, each as one small named
-- function, so a rule is written once in SQL and tied to its hq_domain function by one
-- agreement test (tests/integration/test_rule_agreement.py; docs/architecture.md lists them).
--
-- Every function is LANGUAGE sql with a single SELECT, IMMUTABLE, not STRICT, no SET clause
-- and not SECURITY DEFINER: the planner inlines it into the calling statement, which is then
-- planned as if the expression were written there (index conditions, constant folding of
-- bound parameters, generic plans: tests/integration/test_generic_plans.py). The one
-- exception is tracker_rule_admin_login_roles (a sub-select, so not inlined), which runs once
-- per GitHub sign-in on one row.
--
-- The hot-path functions of migration 0006 are then replaced with their sql/worker_ops.sql
-- blocks as they now read (the blocks call these rules), and tracker_gate_row with the
-- active-worker rule.


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
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
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
          AND tracker_rule_type_accepted(spec, $2::text[])
        ORDER BY created_at, job_id
        LIMIT (SELECT COALESCE(max(lim), 0) FROM ok)
        FOR UPDATE SKIP LOCKED
     ),
     candidates AS (
        SELECT job_id, created_at FROM todo
        UNION ALL
        SELECT e.job_id, e.created_at FROM expired e, ok
        WHERE tracker_rule_reset_status(e.reset_count, ok.max_resets) = 'todo'
          AND tracker_rule_type_accepted(e.spec, $2::text[])
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
                ELSE tracker_rule_reset_status(j.reset_count, ok.max_resets) END,
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
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
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
          AND tracker_rule_type_accepted(spec, $2::text[])
        ORDER BY random_key, job_id
        LIMIT (SELECT COALESCE(max(lim), 0) FROM ok)
        FOR UPDATE SKIP LOCKED
     ),
     candidates AS (
        SELECT job_id, random_key FROM todo
        UNION ALL
        SELECT e.job_id, e.random_key FROM expired e, ok
        WHERE tracker_rule_reset_status(e.reset_count, ok.max_resets) = 'todo'
          AND tracker_rule_type_accepted(e.spec, $2::text[])
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
                ELSE tracker_rule_reset_status(j.reset_count, ok.max_resets) END,
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
          AND j.project_id = $1 AND j.worker_id = $2 AND j.lease_expires_at > $7
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
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
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

-- tracker_gate_row of migration 0006 with the active-worker rule.
CREATE OR REPLACE FUNCTION tracker_gate_row(bytea, text, text)
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               passes boolean)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
SELECT u.id, u.status, u.roles, CASE WHEN p.id IS NOT NULL THEN row_to_json(p)::text END,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2;
END
$fn$;
