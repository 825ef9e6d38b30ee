-- name: list_projects
-- Every project with its five job counts, sorted by id. A count is the folded total plus the
-- deltas appended since the last fold (migration 0004), read in one snapshot: exact, and O(1)
-- in the number of jobs.
WITH k AS (
    SELECT project_id, status, sum(n) AS n
    FROM (SELECT project_id, status, n FROM tracker_job_counts
          UNION ALL
          SELECT project_id, status, n FROM tracker_job_count_deltas) AS u
    GROUP BY project_id, status
)
SELECT p.*,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'todo'), 0)::bigint AS todo,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'wip'), 0)::bigint AS wip,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'done'), 0)::bigint AS done,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'failed'), 0)::bigint AS failed,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'reset_exhausted'), 0)::bigint
           AS reset_exhausted
FROM tracker_projects p
LEFT JOIN k ON k.project_id = p.id
GROUP BY p.id
ORDER BY p.id

-- name: get_project_summary
-- One project with its job counts (O(1): see list_projects).
SELECT p.*, c.todo, c.wip, c.done, c.failed, c.reset_exhausted
FROM tracker_projects p
CROSS JOIN LATERAL (
    SELECT coalesce(sum(n) FILTER (WHERE u.status = 'todo'), 0)::bigint AS todo,
           coalesce(sum(n) FILTER (WHERE u.status = 'wip'), 0)::bigint AS wip,
           coalesce(sum(n) FILTER (WHERE u.status = 'done'), 0)::bigint AS done,
           coalesce(sum(n) FILTER (WHERE u.status = 'failed'), 0)::bigint AS failed,
           coalesce(sum(n) FILTER (WHERE u.status = 'reset_exhausted'), 0)::bigint
               AS reset_exhausted
    FROM (SELECT status, n FROM tracker_job_counts WHERE project_id = $1
          UNION ALL
          SELECT status, n FROM tracker_job_count_deltas WHERE project_id = $1) AS u
) c
WHERE p.id = $1

-- name: get_project
-- One project row (plain read: the client-version gate and admin checks).
SELECT * FROM tracker_projects WHERE id = $1

-- name: lock_project
-- The project row under FOR NO KEY UPDATE: serialises PUTs with each other and with
-- dispatch-limited claims, so a bucket reset by PUT cannot be overwritten by a stale claim.
-- (NO KEY: enqueues hold FOR KEY SHARE on the row and need not wait for these.)
SELECT * FROM tracker_projects WHERE id = $1 FOR NO KEY UPDATE

-- name: lock_project_from_enqueues
-- The locked project row, now FOR UPDATE: waits for the enqueues and imports in flight (they
-- hold FOR KEY SHARE on it) and holds back new ones until this transaction ends.
SELECT 1 FROM tracker_projects WHERE id = $1 FOR UPDATE

-- name: join_random_queue
-- A project switching to random order: every row of it that can still be todo joins the
-- random queue (migration 0016), under lock_project_from_enqueues, so the next claim sees it.
-- A rare, heavy statement on a large queue (one row version per job that is not done).
UPDATE tracker_jobs SET random_queue = true
WHERE project_id = $1 AND status <> 'done' AND NOT random_queue

-- name: upsert_project
-- Write the project PUT computed in Python from the locked (or absent) row; the upsert
-- covers two concurrent creates of one id (the later one becomes an update).
INSERT INTO tracker_projects (id, status, identity_mode, claim_order, dispatch_qps,
    worker_claim_qps, max_jobs_per_claim, policy_version, dispatch_tokens,
    dispatch_refilled_at_ns, client_versions, max_resets, recommended_lease_seconds,
    created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::text[], $12, $13, $14, $15)
ON CONFLICT (id) DO UPDATE
SET status = EXCLUDED.status, claim_order = EXCLUDED.claim_order,
    dispatch_qps = EXCLUDED.dispatch_qps, worker_claim_qps = EXCLUDED.worker_claim_qps,
    max_jobs_per_claim = EXCLUDED.max_jobs_per_claim, policy_version = EXCLUDED.policy_version,
    dispatch_tokens = EXCLUDED.dispatch_tokens,
    dispatch_refilled_at_ns = EXCLUDED.dispatch_refilled_at_ns,
    client_versions = EXCLUDED.client_versions, max_resets = EXCLUDED.max_resets,
    recommended_lease_seconds = EXCLUDED.recommended_lease_seconds,
    updated_at = EXCLUDED.updated_at

-- name: project_has_wip
-- Whether any job of the locked project is WIP (expired or not: only a sweep resets them).
SELECT EXISTS (SELECT 1 FROM tracker_jobs WHERE project_id = $1 AND status = 'wip')

-- name: delete_project
-- Delete the locked project; jobs and claim buckets go by ON DELETE CASCADE.
DELETE FROM tracker_projects WHERE id = $1

-- name: list_jobs
-- One page of a project's jobs by ascending job_id, one extra row to know whether more exist.
SELECT * FROM tracker_jobs
WHERE project_id = $1 AND ($2::text IS NULL OR status = $2) AND job_id > $3
ORDER BY job_id
LIMIT $4

-- name: get_job
-- One job of one project (primary key).
SELECT * FROM tracker_jobs WHERE project_id = $1 AND job_id = $2

-- name: requeue_job
-- failed/reset_exhausted → todo with a clean slate; the row update's own lock and status
-- re-check make a concurrent requeue or delete see nothing to do.
UPDATE tracker_jobs
SET status = 'todo', reset_count = 0, execution_error = NULL, outcome = NULL,
    artifact_receipts = NULL, completed_at = NULL, updated_at = $3
WHERE project_id = $1 AND job_id = $2 AND status IN ('failed', 'reset_exhausted')
RETURNING job_id

-- name: delete_job
-- Remove a non-WIP row; a concurrent claim holding the row makes this wait and re-check.
DELETE FROM tracker_jobs WHERE project_id = $1 AND job_id = $2 AND status <> 'wip'
RETURNING job_id
