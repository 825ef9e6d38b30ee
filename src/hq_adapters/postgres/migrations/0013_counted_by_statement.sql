-- Migration 0013: the worker functions count their own status changes (issue 14).
--
-- The AFTER UPDATE statement trigger of 0004 counts every status change of every writer from
-- its transition tables: a PL/pgSQL call, two scans of the transition tables and an aggregate
-- per statement. On a fleet's one-job claims and completions that was about a tenth of
-- PostgreSQL's CPU per request (benchmarks/notes/optimisations.md). The hot worker statements
-- know their transitions without it: a claim moves picked rows todo → wip and swept rows
-- wip → wip, todo or reset_exhausted; a completion or failure moves wip rows (the only rows
-- with an attempt id, by the table's CHECK) to the status it RETURNs. Each such block now
-- appends those deltas itself, in a data-modifying CTE fed by its UPDATE's RETURNING.
--
-- Exactly one of the two counts each statement, chosen by the setting hq.counted:
-- * the functions below (and the extend functions, which change no status) carry
--   SET hq.counted = on: their statements append their own deltas, and the trigger's WHEN
--   clause skips the trigger for every statement run while the setting is on;
-- * the same blocks run as plain statements (custom plans for large batches, worker.py) see
--   the setting unset: their counted CTE appends nothing and the trigger counts them;
-- * every other writer (enqueue, imports, sweeps, requeue, manual SQL, a reference tracker
--   sharing the database) never sets it and is counted by the trigger as before.
-- hq.counted is private to these functions: a session that sets it itself stops its status
-- changes from being counted. The insert and delete triggers (which also keep the projects
-- tie of 0012) and the resets trigger of 0010 are unchanged.


-- sql/worker_ops.sql block claim_op_fifo, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
                  j.spec::text AS spec, t.swept, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM changed c,
            LATERAL (VALUES (CASE WHEN c.swept THEN 'wip' ELSE 'todo' END, -1), (c.status, 1))
                AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status HAVING sum(s.n) <> 0
     )
SELECT EXISTS (SELECT 1 FROM ok) AS fast, pv.policy_version, c.ord, c.job_id, c.attempt_id,
       c.lease_expires_at, c.value, c.external_id, c.spec
FROM (SELECT 1) AS one
LEFT JOIN (SELECT policy_version FROM p) AS pv ON true
LEFT JOIN changed c ON c.ord IS NOT NULL
ORDER BY c.ord;
END
$fn$;

-- sql/worker_ops.sql block claim_op_random, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
                  j.spec::text AS spec, t.swept, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM changed c,
            LATERAL (VALUES (CASE WHEN c.swept THEN 'wip' ELSE 'todo' END, -1), (c.status, 1))
                AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status HAVING sum(s.n) <> 0
     )
SELECT EXISTS (SELECT 1 FROM ok) AS fast, pv.policy_version, c.ord, c.job_id, c.attempt_id,
       c.lease_expires_at, c.value, c.external_id, c.spec
FROM (SELECT 1) AS one
LEFT JOIN (SELECT policy_version FROM p) AS pv ON true
LEFT JOIN changed c ON c.ord IS NOT NULL
ORDER BY c.ord;
END
$fn$;

-- sql/worker_ops.sql block complete_op, verbatim.
CREATE OR REPLACE FUNCTION tracker_complete_op(text, text, bigint[], text[], text[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
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
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN failed d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses;
END
$fn$;

-- sql/worker_one.sql block complete_one, verbatim.
CREATE OR REPLACE FUNCTION tracker_complete_one(text, text, bigint[], text[], text[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM done d)] AS job_statuses;
END
$fn$;

-- sql/worker_one.sql block fail_one, verbatim.
CREATE OR REPLACE FUNCTION tracker_fail_one(text, text, bigint[], text[], boolean[], text[], bigint, text, text[])
RETURNS TABLE (ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
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
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM failed d)] AS job_statuses;
END
$fn$;

ALTER FUNCTION tracker_extend_op(text, text, bigint[], text[], bigint, bigint, text, text[])
    SET hq.counted = on;
ALTER FUNCTION tracker_extend_one(text, text, bigint[], text[], bigint, bigint, text, text[])
    SET hq.counted = on;

DROP TRIGGER IF EXISTS tracker_job_counts_upd ON tracker_jobs;
CREATE TRIGGER tracker_job_counts_upd AFTER UPDATE ON tracker_jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (current_setting('hq.counted', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION tracker_job_counts_upd();
