-- name: claim_lean_ready_fifo
-- Whether tracker_claim_op_fifo (migration 0017) may claim with claim_lean_fifo instead of the
-- claim_op_fifo block: claim_op_fifo's own conditions for claiming (an active worker, a
-- project that allows a claim, no dispatch_qps or worker_claim_qps, fifo order) and no lease
-- of the project has expired, so its sweep would find nothing. claim_op_fifo's parameters
-- ($1 project, $7 now, $8 user, $10 statuses). One probe of tracker_jobs_expired_order_idx;
-- a lease that expires after it is swept by the next claim, as if this one had come earlier.
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'fifo'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )

-- name: claim_lean_fifo
-- claim_op_fifo when claim_lean_ready_fifo holds (and the worker row has been written): the
-- first LEAST($3, max_jobs_per_claim) todo rows in queue order, locked with SKIP LOCKED, get
-- hq_domain.lifecycle.claim's fields; the same result rows (fast is true, job_id NULL when
-- nothing was claimed) and the same count deltas as claim_op_fifo claiming without a sweep.
-- Without claim_op_fifo's sweep, checks and upsert, this statement's plan has about a third
-- of the nodes, and a claim at B=1 costs PostgreSQL a sixth less (benchmarks/notes).
-- claim_op_fifo's parameters $1-$7.
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
ORDER BY c.ord

-- name: claim_lean_ready_random
-- claim_lean_ready_fifo for tracker_claim_op_random: a random project.
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'random'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )

-- name: claim_lean_random
-- claim_lean_fifo for a random project: claim_op_random's queue (the rows in the random queue,
-- in (random_key, job_id) order) and result.
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
ORDER BY c.ord
