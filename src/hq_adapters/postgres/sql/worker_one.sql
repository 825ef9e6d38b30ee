-- name: gate_row
-- The worker gate read (spec §1.6 steps 1–5) that the gated functions of migration 0011 run
-- in front of the operation, verbatim, in the same round trip: $1 token digest, $2 project
-- (NULL unless an ID), $3 client version. One row: the token's owner (NULL when absent) and
-- whether the gate lets the request through (hq_domain.worker.gate_passes). Only a gate that
-- does not pass reads the project, as JSON, for the caller to raise the error from in the
-- wire order (migration 0020: benchmarks/notes/optimisations.md, row 48).
-- Inlined rather than called: a function of its own cost as much again as the query.
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2

-- name: complete_one
-- complete_op for a batch of exactly one item, with complete_op's parameters and result (one
-- status, NULL = rejected). A fleet's usual request carries one job, and complete_op's
-- machinery for many items (the input list, first-occurrence dedup, an ordered lock scan,
-- the per-item result join) was most of its executor start-up: this statement costs about
-- half as much per call (benchmarks/notes/optimisations.md). One row needs no lock ordering,
-- so the UPDATE locks it itself and re-checks every condition on the row it locks; the worker
-- row is still written first (the `count(*) FROM w` condition). The same checks and the same
-- written fields as complete_op (tests/integration/test_lifecycle_agreement.py runs both),
-- and counted as complete_op (migration 0013).
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = ($5::text[])[1]::jsonb, artifact_receipts = ($6::text[])[1]::jsonb,
            execution_error = NULL, updated_at = $7, completed_at = $7
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        RETURNING j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM done d)] AS job_statuses

-- name: fail_one
-- fail_op for a batch of exactly one item (see complete_one), with fail_op's parameters and
-- result.
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $8),
     p AS (SELECT status, max_resets FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT p.max_resets FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $8 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(($5::boolean[])[1], j.reset_count, ok.max_resets),
            reset_count = CASE WHEN ($5::boolean[])[1] THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(($5::boolean[])[1], j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $7 END,
            execution_error = ($6::text[])[1]::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $7
        FROM ok
        WHERE (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        RETURNING j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, s.n FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM failed d)] AS job_statuses

-- name: extend_one
-- extend_op for a batch of exactly one item (see complete_one), with extend_op's parameters
-- and result.
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = $7),
     p AS (SELECT status FROM tracker_projects WHERE id = $1),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($8::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $2, $7 FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $2 AND user_id = $7)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $6), updated_at = $5
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($3::bigint[])[1] AND j.attempt_id = ($4::text[])[1]
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $5
        RETURNING j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok, ARRAY[(SELECT d.status FROM extended d)] AS job_statuses

-- name: complete_one_generic
-- complete_one under its migration-0011 function's cached generic plan.
SELECT * FROM tracker_complete_one($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: fail_one_generic
-- fail_one under its migration-0011 function's cached generic plan.
SELECT * FROM tracker_fail_one($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: extend_one_generic
-- extend_one under its migration-0011 function's cached generic plan.
SELECT * FROM tracker_extend_one($1, $2, $3, $4, $5, $6, $7, $8)
