-- Migration 0017: a small claim takes a smaller statement when no lease has expired (issue 12).
--
-- tracker_claim_op_fifo and tracker_claim_op_random (claims of at most GENERIC_PLAN_MAX_ITEMS
-- jobs, cached generic plans) ran the claim_op_* block on every call: the checks, the worker
-- upsert, the bounded sweep of expired leases and the claim in one statement. Starting that
-- plan's executor (its CTEs, InitPlans, window, full join and two ModifyTable nodes) was most of
-- what a one-job claim cost PostgreSQL, though in a healthy fleet the sweep almost never finds
-- an expired lease. They now first test claim_lean_ready_* (the same conditions, and no expired
-- lease in the project: one probe of tracker_jobs_expired_order_idx); when it holds they write
-- the worker row if it is missing or names another user (as the `w` CTE does) and claim with
-- claim_lean_*, which has no sweep. Otherwise the claim_op_* block runs as before, so an
-- expired lease is swept, and a refused check answers fast = false, exactly as before.
-- PostgreSQL CPU per B=1 claim, one backend: 526-646 against 414-512 us
-- (benchmarks/notes/optimisations.md, row 35).
--
-- The result rows and count deltas are claim_op_*'s (tests/integration/test_lean_claims.py
-- runs both); the *_custom functions (more than GENERIC_PLAN_MAX_ITEMS jobs) are unchanged.

-- sql/worker_lean.sql block claim_lean_ready_fifo, verbatim.
-- sql/worker_lean.sql block claim_lean_fifo, verbatim.
-- sql/worker_ops.sql block claim_op_fifo, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
#variable_conflict use_column
BEGIN
IF EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'fifo'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )
) THEN
    IF NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8) THEN
        INSERT INTO tracker_workers (worker_id, user_id) VALUES ($5, $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id;
    END IF;
    RETURN QUERY
WITH picked AS (
        SELECT job_id, row_number() OVER (ORDER BY created_at, job_id) AS ord FROM (
            SELECT job_id, created_at FROM tracker_jobs
            WHERE project_id = $1 AND status = 'todo'
              AND tracker_rule_type_accepted(spec, $2::text[])
            ORDER BY created_at, job_id
            LIMIT (SELECT LEAST($3, max_jobs_per_claim) FROM tracker_projects WHERE id = $1)
            FOR UPDATE SKIP LOCKED
        ) AS head
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = 'wip', attempt_id = ($4::text[])[k.ord], worker_id = $5,
            lease_expires_at = $6::bigint, updated_at = $7
        FROM picked k
        WHERE j.job_id = k.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
        RETURNING k.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM (SELECT count(*) AS n FROM changed) AS c,
            LATERAL (VALUES ('todo', -c.n), ('wip', c.n)) AS s(status, n)
        WHERE c.n > 0 AND current_setting('hq.counted', true) = 'on'
     )
SELECT true AS fast, (SELECT policy_version FROM tracker_projects WHERE id = $1) AS policy_version,
       c.ord, c.job_id, c.attempt_id, c.lease_expires_at, c.value, c.external_id, c.spec
FROM (SELECT 1) AS one
LEFT JOIN changed c ON true
ORDER BY c.ord;
    RETURN;
END IF;
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

-- sql/worker_lean.sql block claim_lean_ready_random, verbatim.
-- sql/worker_lean.sql block claim_lean_random, verbatim.
-- sql/worker_ops.sql block claim_op_random, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
#variable_conflict use_column
BEGIN
IF EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'random'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )
) THEN
    IF NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8) THEN
        INSERT INTO tracker_workers (worker_id, user_id) VALUES ($5, $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id;
    END IF;
    RETURN QUERY
WITH picked AS (
        SELECT job_id, row_number() OVER (ORDER BY random_key, job_id) AS ord FROM (
            SELECT job_id, random_key FROM tracker_jobs
            WHERE project_id = $1 AND status = 'todo' AND random_queue
              AND tracker_rule_type_accepted(spec, $2::text[])
            ORDER BY random_key, job_id
            LIMIT (SELECT LEAST($3, max_jobs_per_claim) FROM tracker_projects WHERE id = $1)
            FOR UPDATE SKIP LOCKED
        ) AS head
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = 'wip', attempt_id = ($4::text[])[k.ord], worker_id = $5,
            lease_expires_at = $6::bigint, updated_at = $7
        FROM picked k
        WHERE j.job_id = k.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
        RETURNING k.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM (SELECT count(*) AS n FROM changed) AS c,
            LATERAL (VALUES ('todo', -c.n), ('wip', c.n)) AS s(status, n)
        WHERE c.n > 0 AND current_setting('hq.counted', true) = 'on'
     )
SELECT true AS fast, (SELECT policy_version FROM tracker_projects WHERE id = $1) AS policy_version,
       c.ord, c.job_id, c.attempt_id, c.lease_expires_at, c.value, c.external_id, c.spec
FROM (SELECT 1) AS one
LEFT JOIN changed c ON true
ORDER BY c.ord;
    RETURN;
END IF;
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
          AND project_id = $1 AND status = 'todo' AND random_queue
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
