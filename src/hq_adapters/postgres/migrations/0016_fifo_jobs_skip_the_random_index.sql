-- Migration 0016: jobs of FIFO projects stay out of the random claim index (issue 12).
--
-- Every todo row was in both claim indexes, and the random one is the expensive one to keep:
-- its key (project_id, random_key, job_id) puts each new row at a random place, where the
-- FIFO index, the primary key and the (project_id, job_id) index append at their right edge.
-- COPYing 1,000-job batches into a copy of tracker_jobs cost PostgreSQL 10.5 ms per batch with
-- all four indexes and 5.6-7.1 ms without the random one (benchmarks/notes/optimisations.md,
-- row 25). Most projects claim in FIFO order and never read that index.
--
-- A row is now in tracker_jobs_claim_random_idx only while it is todo *and* in its project's
-- random queue (random_queue). The rule that keeps random claims complete: every row of a
-- random project that can still become todo has random_queue = true.
-- * Enqueues and imports set it from the claim order of the project row they read under
--   FOR KEY SHARE at the start of their transaction (false for FIFO projects).
-- * A PUT that switches a project to random takes its row FOR UPDATE (waiting for enqueues in
--   flight, which hold FOR KEY SHARE, and holding back new ones) and sets random_queue on every
--   row of the project that is not done, in the same transaction: the next claim sees them all.
--   That rewrites those rows (one UPDATE, heavy on a large queue: operations.md says so).
-- * Nothing else writes it: a row keeps its flag through claims, failures, lease expiry and
--   requeues, as it keeps its random_key. A switch back to FIFO leaves the flags alone.
-- * The column defaults to true, so a row written by anything that does not know (a
--   reference database upgraded in place, a hand-written INSERT) is in the random queue:
--   slower to insert, never lost to random claims. Every existing row starts there.
--
-- The random claim statements (claim_random, claim_op_random and the two functions that run
-- the latter verbatim) read `status = 'todo' AND random_queue`, the index's predicate.
-- Rebuilding the index scans tracker_jobs inside the migration transaction (about 20 s per
-- 10M jobs here, as 0009's indexes); adding the column with a constant default is instant.

ALTER TABLE tracker_jobs ADD COLUMN IF NOT EXISTS random_queue boolean NOT NULL DEFAULT true;
DROP INDEX IF EXISTS tracker_jobs_claim_random_idx;
CREATE INDEX tracker_jobs_claim_random_idx
    ON tracker_jobs (project_id, random_key, job_id) WHERE status = 'todo' AND random_queue;

-- sql/worker_ops.sql block claim_op_random, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
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
