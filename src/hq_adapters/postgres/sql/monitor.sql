-- The operators' monitor (`tracker monitor`) and the claim-bucket prune
-- (`tracker prune-claim-buckets`), docs/operations.md "Monitoring". Job counts, queue health
-- and history come from the blocks the dashboard and /metrics use (list_projects,
-- oldest_todo_all, expired_wip_all, all_history); only the monitor's own figures are here.
-- Timestamps are UNIX seconds except bucket_started_at_ms (milliseconds), spec §1.1, §2.9.

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
GROUP BY project_id

-- name: worker_claim_rates
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
ORDER BY b.project_id, b.worker_id, b.policy_version

-- name: prune_project_ids
-- Bucket rows are deleted with their project (ON DELETE CASCADE), so every bucket belongs to
-- a listed project; the prune works through them one project at a time.
SELECT id FROM tracker_projects ORDER BY id

-- name: prune_statement_timeout
-- SET LOCAL statement_timeout = $1 (ms) for this transaction only (not the session), so the
-- prune also runs through a transaction-mode pooler.
SELECT set_config('statement_timeout', $1::text, true)

-- name: prune_project_buckets
-- Delete one project's buckets that started before $2 (ms). The primary key leads with
-- project_id, so each statement touches only that project's rows.
DELETE FROM tracker_worker_claim_buckets
WHERE project_id = $1 AND bucket_started_at_ms < $2
