-- name: fold_job_counts
-- Move the appended count deltas into the per-(project, status) totals (migration 0004) in one
-- statement, so readers see either the deltas or the totals. Deltas of projects that are gone
-- are dropped. Two concurrent folds cannot fold a row twice: the second waits on the rows the
-- first deletes and skips them. Returns the number of total rows written.
WITH gone AS (
    DELETE FROM tracker_job_count_deltas RETURNING project_id, status, n
)
INSERT INTO tracker_job_counts AS c (project_id, status, n)
SELECT g.project_id, g.status, sum(g.n) FROM gone g
WHERE EXISTS (SELECT 1 FROM tracker_projects p WHERE p.id = g.project_id)
GROUP BY g.project_id, g.status
HAVING sum(g.n) <> 0
ORDER BY g.project_id, g.status
ON CONFLICT (project_id, status) DO UPDATE SET n = c.n + EXCLUDED.n

-- name: record_history
-- Snapshot every project's counts and its running total of resets (the pseudo-status 'resets'
-- of migration 0010) into minute $1 (a later snapshot in the same minute wins).
WITH k AS (
    SELECT project_id, status, sum(n) AS n
    FROM (SELECT project_id, status, n FROM tracker_job_counts
          UNION ALL
          SELECT project_id, status, n FROM tracker_job_count_deltas) AS u
    GROUP BY project_id, status
)
INSERT INTO tracker_project_history AS h
    (project_id, minute_s, todo, wip, done, failed, reset_exhausted, resets)
SELECT p.id, $1,
       coalesce(sum(k.n) FILTER (WHERE k.status = 'todo'), 0),
       coalesce(sum(k.n) FILTER (WHERE k.status = 'wip'), 0),
       coalesce(sum(k.n) FILTER (WHERE k.status = 'done'), 0),
       coalesce(sum(k.n) FILTER (WHERE k.status = 'failed'), 0),
       coalesce(sum(k.n) FILTER (WHERE k.status = 'reset_exhausted'), 0),
       coalesce(sum(k.n) FILTER (WHERE k.status = 'resets'), 0)
FROM tracker_projects p
LEFT JOIN k ON k.project_id = p.id
GROUP BY p.id
ON CONFLICT (project_id, minute_s) DO UPDATE
SET todo = EXCLUDED.todo, wip = EXCLUDED.wip, done = EXCLUDED.done,
    failed = EXCLUDED.failed, reset_exhausted = EXCLUDED.reset_exhausted, resets = EXCLUDED.resets

-- name: prune_history
-- Retention: minute snapshots older than $2 (s) except top-of-hour ones; all older than $3.
DELETE FROM tracker_project_history
WHERE (minute_s < $2 AND minute_s % $1 <> 0) OR minute_s < $3

-- name: project_history
-- One project's snapshots since $2 (s), oldest first (primary key range).
SELECT minute_s, todo, wip, done, failed, reset_exhausted, resets
FROM tracker_project_history
WHERE project_id = $1 AND minute_s >= $2
ORDER BY minute_s

-- name: all_history
-- Every project's snapshots since $1 (s), for the project list's rates.
SELECT project_id, minute_s, todo, wip, done, failed, reset_exhausted, resets
FROM tracker_project_history
WHERE minute_s >= $1
ORDER BY project_id, minute_s

-- name: recent_failures
-- The most recent $2 failed/reset_exhausted jobs' errors (failures index, newest first).
(SELECT job_id, execution_error FROM tracker_jobs
 WHERE project_id = $1 AND status = 'failed' ORDER BY job_id DESC LIMIT $2)
UNION ALL
(SELECT job_id, execution_error FROM tracker_jobs
 WHERE project_id = $1 AND status = 'reset_exhausted' ORDER BY job_id DESC LIMIT $2)

-- name: worker_activity
-- Workers seen since $1 (ms), of one project ($2) or all ($2 NULL): from the claim-audit
-- buckets (kept for projects with worker_claim_qps), from the WIP rows they hold now (the
-- partial wip index; updated_at of a WIP row is its last claim or extension) and from the
-- jobs done and failed they reported (tracker_worker_minutes, minutes that end after $1;
-- the primary key for one project, the minute index for all).
WITH b AS (
    SELECT project_id, worker_id, max(bucket_started_at_ms) AS last_ms,
           sum(claim_requests) AS claim_requests, sum(jobs_dispatched) AS jobs_claimed
    FROM tracker_worker_claim_buckets
    WHERE bucket_started_at_ms >= $1 AND ($2::text IS NULL OR project_id = $2)
    GROUP BY project_id, worker_id
), h AS (
    SELECT project_id, worker_id, count(*) AS in_hand, max(updated_at) * 1000 AS last_ms
    FROM tracker_jobs
    WHERE status = 'wip' AND ($2::text IS NULL OR project_id = $2)
    GROUP BY project_id, worker_id
), m AS (
    SELECT project_id, worker_id, max(minute_s) * 1000 AS last_ms,
           sum(done) AS done, sum(failed) AS failed
    FROM tracker_worker_minutes
    WHERE minute_s > $1 / 1000 - 60 AND ($2::text IS NULL OR project_id = $2)
    GROUP BY project_id, worker_id
), k AS (
    SELECT project_id, worker_id FROM b
    UNION SELECT project_id, worker_id FROM h
    UNION SELECT project_id, worker_id FROM m
)
SELECT k.project_id, k.worker_id, w.user_id,
       greatest(b.last_ms, h.last_ms, m.last_ms) AS last_ms,
       coalesce(b.claim_requests, 0) AS claim_requests, coalesce(b.jobs_claimed, 0) AS jobs_claimed,
       coalesce(h.in_hand, 0) AS in_hand,
       coalesce(m.done, 0) AS done, coalesce(m.failed, 0) AS failed
FROM k
LEFT JOIN b ON b.project_id = k.project_id AND b.worker_id = k.worker_id
LEFT JOIN h ON h.project_id = k.project_id AND h.worker_id = k.worker_id
LEFT JOIN m ON m.project_id = k.project_id AND m.worker_id = k.worker_id
LEFT JOIN tracker_workers w ON w.worker_id = k.worker_id
ORDER BY last_ms DESC, project_id, worker_id

-- name: add_worker_minutes
-- Add one process's in-memory tallies (parallel arrays: project, worker, done, failed) to
-- minute $1. Projects deleted meanwhile are skipped; rows are written in key order, so two
-- processes flushing the same keys wait for each other instead of deadlocking.
INSERT INTO tracker_worker_minutes AS m (project_id, worker_id, minute_s, done, failed)
SELECT u.project_id, u.worker_id, $1, u.done, u.failed
FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[])
    AS u(project_id, worker_id, done, failed)
WHERE EXISTS (SELECT 1 FROM tracker_projects p WHERE p.id = u.project_id)
ORDER BY u.project_id, u.worker_id
ON CONFLICT (project_id, minute_s, worker_id) DO UPDATE
SET done = m.done + EXCLUDED.done, failed = m.failed + EXCLUDED.failed

-- name: prune_worker_minutes
-- Retention: worker minutes older than $1 (s) (the minute index).
DELETE FROM tracker_worker_minutes WHERE minute_s < $1

-- name: oldest_todo_all
-- Enqueue time of each project's oldest waiting job (partial fifo claim index, one probe each).
SELECT p.id AS project_id,
       (SELECT created_at FROM tracker_jobs j WHERE j.project_id = p.id AND j.status = 'todo'
        ORDER BY created_at, job_id LIMIT 1) AS oldest_created_at
FROM tracker_projects p

-- name: expired_wip_all
-- Expired, not yet reset leases per project at $1 (s) (the lease sweep index, whose predicate
-- includes `worker_id IS NOT NULL`: true of every wip row, migration 0019).
SELECT project_id, count(*) AS n FROM tracker_jobs
WHERE status = 'wip' AND worker_id IS NOT NULL AND lease_expires_at <= $1
GROUP BY project_id
