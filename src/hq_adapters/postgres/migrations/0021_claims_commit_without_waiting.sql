-- Migration 0021: a claim commits without waiting for its WAL flush (issue 12).
--
-- A claim is a lease: when its commit is lost, the job is simply still `todo`, and the worker's
-- complete, fail or extension of that attempt is rejected with `stale_attempt`, exactly as after
-- a lease that expired and was handed out again. So the claims every worker request runs
-- (tracker_gated_claim, and tracker_claim_op_fifo/random, which it and PostgresWorker.claim call)
-- set synchronous_commit = off for their own transaction: the response no longer waits for
-- the disk, and PostgreSQL's WAL writer flushes the commit within about three
-- wal_writer_delay (0.6 s by default). Any later synchronous commit (a complete, an enqueue)
-- flushes the claims before it, so an acknowledged completion never outlives its claim.
-- On a crash or failover a claim acknowledged in that window is forgotten; no job, outcome or
-- receipt is. Completions, failures, extensions, enqueues, sweeps and every admin write still
-- wait, and so do the claims of dispatch-limited or audited projects, which take the general
-- path (PostgresWorker.claim_in_steps, its own transaction) to keep their rate buckets.
-- A database or role that sets hq.durable_claims = on keeps every claim synchronous
-- (docs/operations.md, "Claims and the disk"). Measured: benchmarks/notes/optimisations.md,
-- row 50.
--
-- The three functions are 0020's and 0017's definitions with one line added first.

-- The commit rule, in one place: synchronous_commit for the calling claim's transaction
-- (set_config's is_local), 'off' unless hq.durable_claims is on; returns the value set.
-- LANGUAGE sql with one SELECT, so PL/pgSQL evaluates the call as a simple expression.
CREATE OR REPLACE FUNCTION tracker_claim_commit_mode()
RETURNS text LANGUAGE sql VOLATILE AS $fn$
SELECT set_config('synchronous_commit',
    CASE WHEN lower(current_setting('hq.durable_claims', true)) IN ('on', 'true', 'yes', '1')
         THEN current_setting('synchronous_commit') ELSE 'off' END,
    true)
$fn$;

-- sql/worker_one.sql block gate_row, verbatim.
-- sql/worker_lean.sql blocks claim_lean_ready_random, claim_lean_ready_fifo, claim_lean_random
-- and claim_lean_fifo, renumbered to this function's parameters (claim_op_*'s $1-$10 are
-- $2, $5, $6, $7, $8, $9, $10, the gate's user, $11, $12); the lean claims' final SELECT
-- aggregates their rows as the call below does.
CREATE OR REPLACE FUNCTION tracker_gated_claim(
    bytea, text, text, text, text[], integer, text[], text, bigint, bigint, integer, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, fast boolean, policy_version bigint, job_ids bigint[],
               attempt_ids text[], leases bigint[], job_values text[], external_ids text[],
               specs text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
    g record;
    lean record;
BEGIN
    PERFORM tracker_claim_commit_mode();
    SELECT * INTO g FROM (
SELECT u.id AS user_id, u.status AS user_status, u.roles AS user_roles,
       COALESCE(tracker_rule_active_worker(u.status, u.roles)
                AND u.id ~ '^[A-Za-z0-9._:-]{1,128}$' AND $3 = ANY (p.client_versions), false)
           AS passes
FROM (SELECT 1) AS one
LEFT JOIN (tracker_machine_tokens t JOIN tracker_users u ON u.id = t.user_id)
       ON t.token_hash = $1 AND t.revoked_at IS NULL
LEFT JOIN tracker_projects p ON p.id = $2
    ) AS gate;
    IF NOT g.passes THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles,
            (SELECT row_to_json(p)::text FROM tracker_projects p WHERE p.id = $2), false,
            NULL::boolean, NULL::bigint, NULL::bigint[], NULL::text[], NULL::bigint[],
            NULL::text[], NULL::text[], NULL::text[];
        RETURN;
    END IF;
    IF $4 = 'random' THEN
        SELECT EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = g.user_id AND p.id = $2
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($12::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'random'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $2 AND status = 'wip' AND lease_expires_at <= $10
  )
        ) AS ready,
        EXISTS (SELECT FROM tracker_workers WHERE worker_id = $8 AND user_id = g.user_id) AS mapped
        INTO lean;
    ELSE
        SELECT EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = g.user_id AND p.id = $2
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($12::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'fifo'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $2 AND status = 'wip' AND lease_expires_at <= $10
  )
        ) AS ready,
        EXISTS (SELECT FROM tracker_workers WHERE worker_id = $8 AND user_id = g.user_id) AS mapped
        INTO lean;
    END IF;
    IF lean.ready THEN
        IF NOT lean.mapped THEN
            INSERT INTO tracker_workers (worker_id, user_id) VALUES ($8, g.user_id)
            ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id;
        END IF;
        IF $4 = 'random' THEN
            RETURN QUERY
WITH picked AS (
        SELECT job_id, row_number() OVER (ORDER BY random_key, job_id) AS ord FROM (
            SELECT job_id, random_key FROM tracker_jobs
            WHERE project_id = $2 AND status = 'todo' AND random_queue
              AND tracker_rule_type_accepted(spec, $5::text[])
            ORDER BY random_key, job_id
            LIMIT (SELECT LEAST($6, max_jobs_per_claim) FROM tracker_projects WHERE id = $2)
            FOR UPDATE SKIP LOCKED
        ) AS head
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = 'wip', attempt_id = ($7::text[])[k.ord], worker_id = $8,
            lease_expires_at = $9::bigint, updated_at = $10
        FROM picked k
        WHERE j.job_id = k.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
        RETURNING k.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, s.n FROM (SELECT count(*) AS n FROM changed) AS c,
            LATERAL (VALUES ('todo', -c.n), ('wip', c.n)) AS s(status, n)
        WHERE c.n > 0 AND current_setting('hq.counted', true) = 'on'
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true, true,
       (SELECT policy_version FROM tracker_projects WHERE id = $2),
       array_agg(c.job_id ORDER BY c.ord), array_agg(c.attempt_id ORDER BY c.ord),
       array_agg(c.lease_expires_at ORDER BY c.ord), array_agg(c.value ORDER BY c.ord),
       array_agg(c.external_id ORDER BY c.ord), array_agg(c.spec ORDER BY c.ord)
FROM changed c;
        ELSE
            RETURN QUERY
WITH picked AS (
        SELECT job_id, row_number() OVER (ORDER BY created_at, job_id) AS ord FROM (
            SELECT job_id, created_at FROM tracker_jobs
            WHERE project_id = $2 AND status = 'todo'
              AND tracker_rule_type_accepted(spec, $5::text[])
            ORDER BY created_at, job_id
            LIMIT (SELECT LEAST($6, max_jobs_per_claim) FROM tracker_projects WHERE id = $2)
            FOR UPDATE SKIP LOCKED
        ) AS head
     ),
     changed AS (
        UPDATE tracker_jobs j
        SET status = 'wip', attempt_id = ($7::text[])[k.ord], worker_id = $8,
            lease_expires_at = $9::bigint, updated_at = $10
        FROM picked k
        WHERE j.job_id = k.job_id AND j.job_id = ANY (ARRAY(SELECT job_id FROM picked))
        RETURNING k.ord, j.job_id, j.attempt_id, j.lease_expires_at, j.value, j.external_id,
                  j.spec::text AS spec
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, s.n FROM (SELECT count(*) AS n FROM changed) AS c,
            LATERAL (VALUES ('todo', -c.n), ('wip', c.n)) AS s(status, n)
        WHERE c.n > 0 AND current_setting('hq.counted', true) = 'on'
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true, true,
       (SELECT policy_version FROM tracker_projects WHERE id = $2),
       array_agg(c.job_id ORDER BY c.ord), array_agg(c.attempt_id ORDER BY c.ord),
       array_agg(c.lease_expires_at ORDER BY c.ord), array_agg(c.value ORDER BY c.ord),
       array_agg(c.external_id ORDER BY c.ord), array_agg(c.spec ORDER BY c.ord)
FROM changed c;
        END IF;
        RETURN;
    END IF;
    IF $4 = 'random' THEN
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
            bool_and(c.fast), max(c.policy_version),
            array_agg(c.job_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.attempt_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.lease_expires_at ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.value ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.external_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.spec ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL)
        FROM tracker_claim_op_random($2, $5, $6, $7, $8, $9, $10, g.user_id, $11, $12) AS c;
    ELSE
        RETURN QUERY SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
            bool_and(c.fast), max(c.policy_version),
            array_agg(c.job_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.attempt_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.lease_expires_at ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.value ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.external_id ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL),
            array_agg(c.spec ORDER BY c.ord) FILTER (WHERE c.job_id IS NOT NULL)
        FROM tracker_claim_op_fifo($2, $5, $6, $7, $8, $9, $10, g.user_id, $11, $12) AS c;
    END IF;
END
$fn$;

-- sql/worker_lean.sql block claim_lean_ready_fifo, verbatim.
-- sql/worker_lean.sql block claim_lean_fifo, verbatim.
-- sql/worker_ops.sql block claim_op_fifo, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM tracker_claim_commit_mode();
IF EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'fifo'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )
) THEN
    IF NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8) THEN
        INSERT INTO tracker_workers (worker_id, user_id) VALUES ($5, $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id;
    END IF;
    RETURN QUERY
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
ORDER BY c.ord;
    RETURN;
END IF;
RETURN QUERY
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
ORDER BY c.ord;
END
$fn$;

-- sql/worker_lean.sql block claim_lean_ready_random, verbatim.
-- sql/worker_lean.sql block claim_lean_random, verbatim.
-- sql/worker_ops.sql block claim_op_random, verbatim.
CREATE OR REPLACE FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
RETURNS TABLE (fast boolean, policy_version bigint, ord bigint, job_id bigint, attempt_id text, lease_expires_at bigint, value text, external_id text, spec text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on
    SET enable_sort = off SET jit = off AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM tracker_claim_commit_mode();
IF EXISTS (
SELECT 1 FROM tracker_users u, tracker_projects p
WHERE u.id = $8 AND p.id = $1
  AND tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
  AND p.dispatch_qps IS NULL AND p.worker_claim_qps IS NULL AND p.claim_order = 'random'
  AND NOT EXISTS (
      SELECT 1 FROM tracker_jobs
      WHERE project_id = $1 AND status = 'wip' AND lease_expires_at <= $7
  )
) THEN
    IF NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $5 AND user_id = $8) THEN
        INSERT INTO tracker_workers (worker_id, user_id) VALUES ($5, $8)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id;
    END IF;
    RETURN QUERY
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
ORDER BY c.ord;
    RETURN;
END IF;
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
