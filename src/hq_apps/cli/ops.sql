-- Read-only monitoring queries for `tracker monitor` and the claim-bucket prune for
-- `tracker prune-claim-buckets` (docs/operations.md, "Monitoring"). Timestamps are UNIX
-- seconds except bucket_started_at_ms (milliseconds), as in the schema (spec §1.1, §2.9).

-- name: projects
-- Every project with its live policy, so projects without jobs are listed too.
SELECT id, status, policy_version, dispatch_qps, worker_claim_qps
FROM tracker_projects
ORDER BY id;

-- name: job_counts
-- Current job counts by project and status: folded totals plus pending deltas, kept by the
-- triggers of migration 0004 (O(1) in the number of jobs, exact as of the statement).
SELECT project_id, status, sum(n)::bigint AS n
FROM (SELECT project_id, status, n FROM tracker_job_counts
      UNION ALL
      SELECT project_id, status, n FROM tracker_job_count_deltas) AS u
GROUP BY project_id, status;

-- name: oldest_todo
-- Enqueue time of the oldest waiting job; served by the partial fifo claim index.
SELECT project_id, min(created_at) AS oldest_created_at
FROM tracker_jobs
WHERE status = 'todo'
GROUP BY project_id;

-- name: expired_wip
-- Attempts whose lease has run out but which no sweep or claim has reset yet ($1 = now, s).
SELECT project_id, count(*) AS n
FROM tracker_jobs
WHERE status = 'wip' AND lease_expires_at <= $1
GROUP BY project_id;

-- name: finished_since
-- Rows that reached a terminal state since $1 (s), by their current status. updated_at, not
-- completed_at: an expiry that exhausts the retry limit leaves completed_at null (spec §2.3).
-- A receipt-bearing completion is a done row whose artifact_receipts is a non-empty array.
SELECT project_id,
       count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'reset_exhausted') AS reset_exhausted,
       count(*) FILTER (WHERE status = 'done'
                          AND jsonb_typeof(artifact_receipts) = 'array'
                          AND artifact_receipts <> '[]'::jsonb) AS done_with_receipts
FROM tracker_jobs
WHERE status IN ('done', 'failed', 'reset_exhausted') AND updated_at >= $1
GROUP BY project_id;

-- name: worker_buckets
-- Per-worker claim requests since $1 (ms), grouped by the policy version the worker reported,
-- next to the project's current policy. One bucket row covers one minute.
SELECT b.project_id, b.worker_id, b.policy_version,
       p.policy_version AS current_policy_version, p.worker_claim_qps,
       count(*) AS buckets,
       sum(b.claim_requests) AS claim_requests,
       sum(b.jobs_dispatched) AS jobs_dispatched,
       max(b.claim_requests) AS peak_claim_requests,
       max(b.bucket_started_at_ms) AS last_bucket_ms
FROM tracker_worker_claim_buckets AS b
JOIN tracker_projects AS p ON p.id = b.project_id
WHERE b.bucket_started_at_ms >= $1
GROUP BY b.project_id, b.worker_id, b.policy_version, p.policy_version, p.worker_claim_qps
ORDER BY b.project_id, b.worker_id, b.policy_version;

-- name: project_ids
-- Bucket rows are deleted with their project (ON DELETE CASCADE), so every bucket belongs to
-- a listed project; the prune works through them one project at a time.
SELECT id FROM tracker_projects ORDER BY id;

-- name: prune_project_buckets
-- Delete one project's buckets that started before $2 (ms). The primary key leads with
-- project_id, so each statement touches only that project's rows.
DELETE FROM tracker_worker_claim_buckets
WHERE project_id = $1 AND bucket_started_at_ms < $2;

-- name: history_since
-- Per-minute count snapshots since $1 (s) (migration 0005), for the rate and ETA.
SELECT project_id, minute_s, todo, wip, done, failed, reset_exhausted
FROM tracker_project_history
WHERE minute_s >= $1
ORDER BY project_id, minute_s;
