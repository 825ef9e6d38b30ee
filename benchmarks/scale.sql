-- name: insert_finished
-- Bulk-load finished rows straight into tracker_jobs (bypassing the API, which would take hours
-- for 10M): status done, a success outcome, old timestamps. $3..$4 is the generate_series range.
INSERT INTO tracker_jobs (project_id, value, spec, status, random_key, reset_count, outcome,
                          artifact_receipts, created_at, updated_at, completed_at)
SELECT $1, 'https://example.org/finished/' || g, '{}'::jsonb, 'done',
       floor(random() * 4294967296 - 2147483648)::integer, 0,
       '{"kind":"success","code":200,"uri":null,"meta":null}'::jsonb, 'null'::jsonb, $2, $2, $2
FROM generate_series($3::bigint, $4::bigint) AS g

-- name: insert_expired
-- Bulk-load WIP rows whose leases expired at $2 - 1: the backlog a claim (and the background
-- sweeper) must reset in bounded batches (D2). created_at $2 - 3600 puts them ahead in FIFO.
INSERT INTO tracker_jobs (project_id, value, spec, status, random_key, reset_count,
                          attempt_id, worker_id, lease_expires_at, created_at, updated_at)
SELECT $1, 'https://example.org/expired/' || g, '{}'::jsonb, 'wip',
       floor(random() * 4294967296 - 2147483648)::integer, 0,
       'at_expired_' || g, 'bench-ghost', $2 - 1, $2 - 3600, $2 - 3600
FROM generate_series(1, $3::bigint) AS g

-- name: count_expired
-- How much of the expired backlog is left.
SELECT count(*) FROM tracker_jobs
WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $2

-- name: delete_project_jobs
-- Mass delete for the stale-statistics probe: leaves dead tuples behind as a project
-- deletion does, before autovacuum has run.
DELETE FROM tracker_jobs WHERE project_id = $1
