-- name: worker_gate
-- Client-version gate reads (spec §1.6 steps 1 and 3) in one round trip: the owner of a
-- non-revoked token ($1, digest) and the project ($2, NULL when the path is not an ID), each
-- all-NULL when absent. Plain reads, no locks: the operation re-reads both itself (step 8).
-- The read is tracker_worker_gate (migration 0006), whose plan is cached generic: two key
-- lookups, the same plan for every parameter.
SELECT g.user_id, g.user_status, g.user_roles, (g.project).*
FROM tracker_worker_gate($1, $2) AS g

-- name: complete_op
-- Route 21 as one autocommit statement: worker_context's checks and worker→user upsert plus
-- the batch ($1 project, $2 worker, $3 job ids, $4 attempt ids, $5 outcomes, $6 receipts,
-- $7 now; $8 user, $9 statuses allowing the op). Nothing is written unless the user is an
-- active worker and the project allows the op (ok is empty otherwise: the caller re-reads the
-- checks with worker_context and raises the error, or runs this again if they changed in
-- between). job_statuses are in input order, NULL = rejected.
-- Lock order: the worker row first (the `count(*) FROM w` condition runs the upsert before any
-- job row is locked), then job rows in job_id order. As in worker_context, an unchanged worker
-- mapping is neither written nor locked.
-- The lock scan reads tracker_jobs alone, probing the primary key with the batch's job ids:
-- no join with the items that a plan could run as items × items (a nested loop over the item
-- list per row: 65,280 rows filtered at 256 items), no per-row test against the list of
-- attempt ids (8 ms at 256 items), and no status = 'wip' that would let a plan read the
-- project's live leases through the partial wip index instead. It may lock a row of this
-- worker whose attempt the batch names wrongly (stale); the UPDATE matches the exact
-- (job, attempt) pairs, so such a row is locked for the statement and not changed. The
-- project is tested as `(j.project_id = $1) IS TRUE` so that no index led by project_id can
-- drive the scan (migration 0009: a generic plan made on a young table read the whole project
-- that way). The UPDATE
-- reaches its rows through `job_id = ANY (ARRAY(… locked …))`, a primary-key probe whatever
-- the statistics say (migration 0009 and tests/integration/test_generic_plans.py). The rules are migration 0008's
-- inlined functions: tracker_rule_active_worker (hq_domain.users.is_active_worker) and
-- tracker_rule_first_items, the items that may apply (hq_domain.lifecycle.first_items: the
-- first occurrence of each (job_id, attempt_id); their payload is read by position). The SET
-- list is hq_domain.lifecycle.complete.
-- Counting (migration 0013): in its function (hq.counted = on) the statement appends its
-- status changes (wip → the RETURNed status) to tracker_job_count_deltas itself, in the
-- counted CTE, and the update trigger skips it; run plain, the CTE appends nothing and the
-- trigger counts it. fail_op, claim_op_* and the one-item forms do the same.
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
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, outcome, receipts, ord)
     ),
     firsts AS (
        SELECT f.*, ($5::text[])[f.ord] AS outcome, ($6::text[])[f.ord] AS receipts
        FROM tracker_rule_first_items($3::bigint[], $4::text[]) AS f
     ),
     locked_done AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = f.outcome::jsonb, artifact_receipts = f.receipts::jsonb,
            execution_error = NULL, updated_at = $7, completed_at = $7
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_done))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $7
        RETURNING f.ord, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN done d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses

-- name: fail_op
-- Route 22 as one autocommit statement: worker_context + the batch ($1..$4 as complete_op's,
-- $5 retryable flags, $6 errors, $7 now; $8 user, $9 allowed statuses), written only when ok
-- (see complete_op). tracker_rule_fail_status
-- (migration 0008) is hq_domain.lifecycle.fail's status over the project's max_resets read in
-- this statement; completed_at is set unless the job goes back to todo. Counted as complete_op.
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
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[], $5::boolean[], $6::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, retryable, error, ord)
     ),
     firsts AS (
        SELECT f.*, ($5::boolean[])[f.ord] AS retryable, ($6::text[])[f.ord] AS error
        FROM tracker_rule_first_items($3::bigint[], $4::text[]) AS f
     ),
     locked_failed AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets),
            reset_count = CASE WHEN f.retryable THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $7 END,
            execution_error = f.error::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $7
        FROM firsts f, ok
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_failed))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $7
        RETURNING f.ord, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $1, s.status, sum(s.n) FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN failed d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses

-- name: extend_op
-- Route 23 as one autocommit statement: worker_context + the batch ($1..$4 as complete_op's,
-- $5 now, $6 new deadline; $7 user, $8 allowed statuses), written only when ok (see
-- complete_op). The deadline only grows
-- (hq_domain.lifecycle.extend).
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
     input AS (
        SELECT * FROM unnest($3::bigint[], $4::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, ord)
     ),
     firsts AS (
        SELECT * FROM tracker_rule_first_items($3::bigint[], $4::text[])
     ),
     locked_extended AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($3::bigint[])
          AND (j.project_id = $1) IS TRUE AND j.worker_id = $2 AND j.lease_expires_at > $5
        ORDER BY j.job_id
        FOR UPDATE
     ),
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $6), updated_at = $5
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_extended))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $2
          AND j.lease_expires_at > $5
        RETURNING f.ord, j.status
     )
SELECT EXISTS (SELECT 1 FROM ok) AS ok,
       ARRAY(SELECT d.status FROM input i LEFT JOIN extended d ON d.ord = i.ord ORDER BY i.ord)
           AS job_statuses

-- name: claim_op_fifo
-- Route 20 for an unlimited, unaudited fifo project as one autocommit statement: the checks
-- and upsert of worker_context, the bounded sweep (sweep_project) and the claim (claim_fifo).
-- One statement cannot see its own sweep, so swept rows that go back to todo are offered to the
-- claim directly: the claim takes the first LEAST($3, max_jobs_per_claim) of (locked todo rows
-- ∪ revived swept rows) in queue order, which is what sweep-then-claim picks. Each row is
-- updated once: picked → wip (reset_count + 1 if it was swept), swept only → todo or
-- reset_exhausted per §2.3. Both scans use SKIP LOCKED, as the two statements do, and never
-- wait; the worker row is upserted first, as on the other paths. Does nothing (fast = false)
-- unless the user is an active worker, the project allows a claim, dispatch_qps and
-- worker_claim_qps are NULL and claim_order is fifo; the caller then runs the transactional
-- path (which raises the errors, takes the bucket lock, audits).
-- $1 project, $2 accept types, $3 max_jobs, $4 attempt ids (≥ $3), $5 worker, $6 lease end,
-- $7 now, $8 user, $9 sweep bound, $10 statuses allowing a claim. Returns ≥ 1 row; job_id
-- is NULL when nothing was claimed.
-- Rules (migration 0008, inlined): tracker_rule_type_accepted for accept types, and
-- tracker_rule_reset_status for swept rows (hq_domain.lifecycle.expire; a revived row is one
-- it sends back to todo). Picked rows get hq_domain.lifecycle.claim's fields.
-- Counted as complete_op (migration 0013): a picked row was todo, a swept row wip (both
-- locked), and RETURNING gives the new status.
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
ORDER BY c.ord

-- name: claim_op_random
-- Route 20 for an unlimited, unaudited random project: as claim_op_fifo, in (random_key,
-- job_id) order, from the rows in the random queue (`random_queue`: every row of a random
-- project, migration 0016). Written out rather than parameterised so the WHERE and ORDER BY
-- match the random partial index; tests/integration/test_sql_blocks.py keeps the two copies
-- identical otherwise.
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
ORDER BY c.ord


-- name: claim_op_fifo_generic
-- claim_op_fifo with the same parameters, run by its migration-0006 function under a cached
-- generic plan: the adapter's choice for claims of at most GENERIC_PLAN_MAX_ITEMS jobs.
SELECT * FROM tracker_claim_op_fifo($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY ord

-- name: claim_op_random_generic
-- claim_op_random under a cached generic plan (see claim_op_fifo_generic).
SELECT * FROM tracker_claim_op_random($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY ord

-- name: claim_op_fifo_custom
-- claim_op_fifo planned per execution with the batch's size, by its migration-0015 function
-- (which never sorts the queue): the adapter's choice above GENERIC_PLAN_MAX_ITEMS jobs.
SELECT * FROM tracker_claim_op_fifo_custom($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY ord

-- name: claim_op_random_custom
-- claim_op_random planned per execution (see claim_op_fifo_custom).
SELECT * FROM tracker_claim_op_random_custom($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY ord

-- name: complete_op_generic
-- complete_op under a cached generic plan, for batches of at most GENERIC_PLAN_MAX_ITEMS.
SELECT * FROM tracker_complete_op($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: fail_op_generic
-- fail_op under a cached generic plan, for batches of at most GENERIC_PLAN_MAX_ITEMS.
SELECT * FROM tracker_fail_op($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: extend_op_generic
-- extend_op under a cached generic plan, for batches of at most GENERIC_PLAN_MAX_ITEMS.
SELECT * FROM tracker_extend_op($1, $2, $3, $4, $5, $6, $7, $8)

-- name: gated_claim
-- Routes 20's gate read (as worker_gate) and claim_op_* in one round trip, through migration
-- 0006's tracker_gated_claim: the claim runs only when the gate lets the request through
-- (ran); $4 is the claim order hint. One row; the claimed jobs as arrays in claim order.
SELECT * FROM tracker_gated_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)

-- name: gated_complete
-- Route 21's gate read and complete_op in one round trip (tracker_gated_complete).
SELECT * FROM tracker_gated_complete($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: gated_claim_joined
-- Several waiting gated_claim calls in one statement (hq_adapters/postgres/joined.py): each
-- scalar argument as an array over the calls, each array argument as one flat array with each
-- call's bounds in it (accept types $5-$7, attempt IDs $9-$11, statuses $16-$18). The calls
-- run in order (a nested loop over the unnest, the function on the inside), each seeing what
-- the earlier ones wrote; one row per call, hq_slot its 0-based index.
SELECT c.hq_slot - 1 AS hq_slot, g.*
FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $6::int[], $7::int[], $8::int[],
            $10::int[], $11::int[], $12::text[], $13::bigint[], $14::bigint[], $15::int[],
            $17::int[], $18::int[])
     WITH ORDINALITY AS c(digest, project, version, hint, types_lo, types_hi, max_jobs, ids_lo,
                          ids_hi, worker, lease, now, sweep, statuses_lo, statuses_hi, hq_slot)
CROSS JOIN LATERAL tracker_gated_claim(
    c.digest, c.project, c.version, c.hint, ($5::text[])[c.types_lo:c.types_hi], c.max_jobs,
    ($9::text[])[c.ids_lo:c.ids_hi], c.worker, c.lease, c.now, c.sweep,
    ($16::text[])[c.statuses_lo:c.statuses_hi]) AS g

-- name: gated_complete_joined
-- Several waiting gated_complete calls in one statement, packed as gated_claim_joined's (job
-- IDs $5-$7, attempt IDs $8-$10, outcomes $11-$13, receipts $14-$16, statuses $18-$20).
SELECT c.hq_slot - 1 AS hq_slot, g.*
FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $6::int[], $7::int[], $9::int[],
            $10::int[], $12::int[], $13::int[], $15::int[], $16::int[], $17::bigint[],
            $19::int[], $20::int[])
     WITH ORDINALITY AS c(digest, project, version, worker, jobs_lo, jobs_hi, att_lo, att_hi,
                          out_lo, out_hi, rec_lo, rec_hi, now, statuses_lo, statuses_hi, hq_slot)
CROSS JOIN LATERAL tracker_gated_complete(
    c.digest, c.project, c.version, c.worker, ($5::bigint[])[c.jobs_lo:c.jobs_hi],
    ($8::text[])[c.att_lo:c.att_hi], ($11::text[])[c.out_lo:c.out_hi],
    ($14::text[])[c.rec_lo:c.rec_hi], c.now, ($18::text[])[c.statuses_lo:c.statuses_hi]) AS g

-- name: gated_fail
-- Route 22's gate read and fail_op in one round trip (tracker_gated_fail).
SELECT * FROM tracker_gated_fail($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: gated_extend
-- Route 23's gate read and extend_op in one round trip (tracker_gated_extend).
SELECT * FROM tracker_gated_extend($1, $2, $3, $4, $5, $6, $7, $8, $9)
