-- Migration 0015: a claim's cached plan never sorts the project's queue (issue 12).
--
-- The claim functions read the head of the queue in index order: FIFO claims through
-- tracker_jobs_claim_idx (project_id, created_at, job_id), random ones through
-- tracker_jobs_claim_random_idx (project_id, random_key, job_id); both indexes cover exactly
-- the todo rows. Their generic plans are made at a connection's first claim after anything
-- invalidated them (a VACUUM or ANALYZE of tracker_jobs does), from whatever statistics exist
-- then. When those say the project holds about one todo row (a table vacuumed while empty and
-- filled since, with autovacuum not yet back), an explicit Sort of one row costs nothing, and
-- PostgreSQL may read the queue through the *other* claim index and sort it: the two paths
-- then differ by a few hundredths of a cost unit (the indexes' heights and sizes). Seen in
-- benchmarks.counts_http at B=4 W=4: every FIFO claim read and sorted all of its project's
-- 5,000-14,000 todo rows through the random index, 11-13 ms of PostgreSQL per claim, 650
-- instead of 2,200 jobs/s, until the next invalidation; at 10M todo jobs a claim would sort
-- 10M rows.
--
-- Both claim functions now plan with enable_sort = off, so a path that sorts costs more than
-- any path that reads an index in the order wanted: the queue is always read in index order,
-- whatever the statistics. Their other sorts (row_number over the few candidates, the final
-- order of the claimed rows) have no sort-free alternative, so no other choice changes. They
-- also plan with jit = off: the disabled sorts put the plans' estimated cost far above
-- jit_above_cost, and JIT compiling each plan took ~770 ms here. Per function, like their
-- other planner settings (0006, 0009): no session state, PgBouncer-safe.
--
-- Claims of more than GENERIC_PLAN_MAX_ITEMS jobs ran the same blocks as plain statements,
-- planned per execution in the pool's session, where the same statistics gave the same sort
-- (tests/integration/test_generic_plans.py). They now run through two more functions with the
-- blocks verbatim, planned per execution (force_custom_plan, as before) under the same two
-- settings; like the generic ones they count their own status changes (hq.counted, 0013).

ALTER FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_sort = off SET jit = off;
ALTER FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_sort = off SET jit = off;

-- sql/worker_ops.sql block claim_op_fifo, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_fifo_custom(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan
    SET enable_sort = off SET jit = off SET hq.counted = on AS $fn$
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
CREATE OR REPLACE FUNCTION tracker_claim_op_random_custom(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan
    SET enable_sort = off SET jit = off SET hq.counted = on AS $fn$
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
