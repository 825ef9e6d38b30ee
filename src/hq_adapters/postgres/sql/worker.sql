-- name: worker_context
-- User and project as the operation sees them, plus the worker→user upsert (spec §2.10) done
-- only when the user is an active worker and the project status allows the operation ($4).
-- One round trip. An unchanged mapping is not touched at all: ON CONFLICT DO UPDATE would lock
-- the row even when its WHERE skips the write (a WAL record per request, and a worker's
-- concurrent requests queued on that lock). A changed or missing mapping is upserted, locking
-- only that row; the last writer wins (spec §2.10).
WITH u AS (SELECT id, status, roles FROM tracker_users WHERE id = $1),
     p AS (SELECT * FROM tracker_projects WHERE id = $2),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $3, u.id FROM u, p
        WHERE $3::text IS NOT NULL AND tracker_rule_active_worker(u.status, u.roles)
          AND p.status = ANY ($4::text[])
          AND NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $3 AND user_id = u.id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
     )
SELECT u.status AS user_status, u.roles AS user_roles, p.*
FROM (SELECT 1) AS one LEFT JOIN u ON true LEFT JOIN p ON true

-- name: sweep_project
-- Claim step 5, bounded (D2): reset at most $3 expired WIP rows of one project per §2.3.
-- SKIP LOCKED leaves rows another transaction is finishing or sweeping to that transaction;
-- the UPDATE re-checks nothing else because the locked rows cannot change under us.
WITH expired AS (
    SELECT job_id FROM tracker_jobs
    WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $2
    ORDER BY lease_expires_at, job_id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE tracker_jobs j
SET status = tracker_rule_reset_status(j.reset_count, $4),
    reset_count = j.reset_count + 1,
    attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $2
FROM expired e
WHERE j.job_id = e.job_id

-- name: sweep_expired
-- Background sweep (D2): reset at most $2 expired WIP rows of any project, each with its
-- project's max_resets. SKIP LOCKED keeps it off rows that claims or completions hold.
-- `worker_id IS NOT NULL` (true of every wip row) is tracker_jobs_lease_sweep_order_idx's
-- predicate, which the claims' sweeps cannot imply (migration 0019).
WITH expired AS (
    SELECT job_id FROM tracker_jobs
    WHERE status = 'wip' AND worker_id IS NOT NULL AND lease_expires_at <= $1
    ORDER BY lease_expires_at, job_id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE tracker_jobs j
SET status = tracker_rule_reset_status(j.reset_count, p.max_resets),
    reset_count = j.reset_count + 1,
    attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $1
FROM expired e, tracker_projects p
WHERE j.job_id = e.job_id AND p.id = j.project_id

-- name: claim_plan_settings
-- The claim functions' planner settings (migration 0015) for the general claim's transaction,
-- ending with it: claim_fifo and claim_random read the queue in their own index's order
-- whatever the statistics say (no plan sorts it), and are not JIT-compiled.
SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)

-- name: claim_fifo
-- Claim steps 7–8 for fifo: lock up to $3 todo rows in (created_at, job_id) order, skipping
-- rows other claims hold (each row goes to exactly one claimer), and make them WIP with the
-- attempt ids generated in Python ($4, one per position). Rows come back in claim order.
-- The = ANY condition gives the UPDATE an index condition on job_id whatever the planner's
-- statistics say (stale statistics otherwise let it walk every project's rows per claim).
WITH picked AS (
    SELECT job_id, created_at FROM tracker_jobs
    WHERE project_id = $1 AND status = 'todo'
      AND tracker_rule_type_accepted(spec, $2::text[])
    ORDER BY created_at, job_id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), numbered AS (
    SELECT job_id, row_number() OVER (ORDER BY created_at, job_id) AS ord FROM picked
), claimed AS (
    UPDATE tracker_jobs j
    SET status = 'wip', attempt_id = ($4::text[])[n.ord], worker_id = $5,
        lease_expires_at = $6, updated_at = $7
    FROM numbered n
    WHERE j.job_id = n.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
    RETURNING n.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
              j.spec::text AS spec
)
SELECT * FROM claimed ORDER BY ord

-- name: claim_random
-- Claim steps 7–8 for random: as claim_fifo, ordered by (random_key, job_id), from the rows in
-- the random queue (every row of a random project, migration 0016).
WITH picked AS (
    SELECT job_id, random_key FROM tracker_jobs
    WHERE project_id = $1 AND status = 'todo' AND random_queue
      AND tracker_rule_type_accepted(spec, $2::text[])
    ORDER BY random_key, job_id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), numbered AS (
    SELECT job_id, row_number() OVER (ORDER BY random_key, job_id) AS ord FROM picked
), claimed AS (
    UPDATE tracker_jobs j
    SET status = 'wip', attempt_id = ($4::text[])[n.ord], worker_id = $5,
        lease_expires_at = $6, updated_at = $7
    FROM numbered n
    WHERE j.job_id = n.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
    RETURNING n.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
              j.spec::text AS spec
)
SELECT * FROM claimed ORDER BY ord

-- name: todo_exists
-- Claim step 6: is there matching todo work (decides 429 vs an empty 200)? Plain read.
SELECT EXISTS (
    SELECT 1 FROM tracker_jobs
    WHERE project_id = $1 AND status = 'todo'
      AND tracker_rule_type_accepted(spec, $2::text[])
)

-- name: store_dispatch_bucket
-- Persist the bucket of a project whose row this transaction holds (lock_project); the refill
-- time never moves backwards (D8) even if another replica's clock is behind.
UPDATE tracker_projects
SET dispatch_tokens = $2,
    dispatch_refilled_at_ns = GREATEST(COALESCE(dispatch_refilled_at_ns, $3), $3)
WHERE id = $1

-- name: record_claim_bucket
-- Claim audit (§2.9): count one request and n jobs in the worker's one-minute bucket; the
-- upsert serialises concurrent claims of one worker on that row.
INSERT INTO tracker_worker_claim_buckets AS b
    (project_id, worker_id, bucket_started_at_ms, claim_requests, jobs_dispatched,
     policy_version)
VALUES ($1, $2, $3, 1, $4, $5)
ON CONFLICT (project_id, worker_id, bucket_started_at_ms) DO UPDATE
SET claim_requests = b.claim_requests + 1,
    jobs_dispatched = b.jobs_dispatched + EXCLUDED.jobs_dispatched,
    policy_version = EXCLUDED.policy_version
