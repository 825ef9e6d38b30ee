-- Migration 0020: a passing worker gate no longer reads the project as JSON (issue 12).
--
-- The gate read (sql/worker_one.sql block gate_row) returned the project row as JSON on every
-- worker request, for the API to raise the gate's error from (404, or 426 with the allowed
-- versions). When the gate passes there is no error to raise, and building and sending that
-- JSON cost ~2-3 % of a claim and completion's PostgreSQL CPU
-- (benchmarks/notes/optimisations.md, row 48). The block now returns only the token's owner
-- and the verdict; a gate that does not pass reads the project as JSON in its own statement,
-- and a passing one answers NULL in the project column. The four gated functions of 0018 are
-- replaced with that; nothing else in them changes. The project a refused gate returns may be
-- newer than the one the verdict read (a second statement): the API re-checks it, and when
-- the re-check passes it runs the operation on its own, as it always did for that race
-- (hq_apps/api/worker_ops.py).

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

-- sql/worker_one.sql block gate_row, verbatim.
-- sql/worker_one.sql block complete_one (a batch of one) and sql/worker_ops.sql block complete_op
-- (a larger one), renumbered: $1-$9 become $2, $4-$9, the gate's user, $10.
-- Their final SELECTs add the gate's columns.
CREATE OR REPLACE FUNCTION tracker_gated_complete(
    bytea, text, text, text, bigint[], text[], text[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
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
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = ($7::text[])[1]::jsonb, artifact_receipts = ($8::text[])[1]::jsonb,
            execution_error = NULL, updated_at = $9, completed_at = $9
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($5::bigint[])[1] AND j.attempt_id = ($6::text[])[1]
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $9
        RETURNING j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, s.n FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok), ARRAY[(SELECT d.status FROM done d)];
    ELSE
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($5::bigint[], $6::text[], $7::text[], $8::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, outcome, receipts, ord)
     ),
     firsts AS (
        SELECT f.*, ($7::text[])[f.ord] AS outcome, ($8::text[])[f.ord] AS receipts
        FROM tracker_rule_first_items($5::bigint[], $6::text[]) AS f
     ),
     locked_done AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($5::bigint[])
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $9
        ORDER BY j.job_id
        FOR UPDATE
     ),
     done AS (
        UPDATE tracker_jobs j
        SET status = 'done', attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL,
            outcome = f.outcome::jsonb, artifact_receipts = f.receipts::jsonb,
            execution_error = NULL, updated_at = $9, completed_at = $9
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_done))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $4
          AND j.lease_expires_at > $9
        RETURNING f.ord, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, sum(s.n) FROM done d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok),
       ARRAY(SELECT d.status FROM input i LEFT JOIN done d ON d.ord = i.ord ORDER BY i.ord);
    END IF;
END
$fn$;

-- sql/worker_one.sql block gate_row, verbatim.
-- sql/worker_one.sql block fail_one (a batch of one) and sql/worker_ops.sql block fail_op
-- (a larger one), renumbered: $1-$9 become $2, $4-$9, the gate's user, $10.
-- Their final SELECTs add the gate's columns.
CREATE OR REPLACE FUNCTION tracker_gated_fail(
    bytea, text, text, text, bigint[], text[], boolean[], text[], bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
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
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status, max_resets FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT p.max_resets FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(($7::boolean[])[1], j.reset_count, ok.max_resets),
            reset_count = CASE WHEN ($7::boolean[])[1] THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(($7::boolean[])[1], j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $9 END,
            execution_error = ($8::text[])[1]::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $9
        FROM ok
        WHERE (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($5::bigint[])[1] AND j.attempt_id = ($6::text[])[1]
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $9
        RETURNING j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, s.n FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok), ARRAY[(SELECT d.status FROM failed d)];
    ELSE
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status, max_resets FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT p.max_resets FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($10::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($5::bigint[], $6::text[], $7::boolean[], $8::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, retryable, error, ord)
     ),
     firsts AS (
        SELECT f.*, ($7::boolean[])[f.ord] AS retryable, ($8::text[])[f.ord] AS error
        FROM tracker_rule_first_items($5::bigint[], $6::text[]) AS f
     ),
     locked_failed AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($5::bigint[])
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $9
        ORDER BY j.job_id
        FOR UPDATE
     ),
     failed AS (
        UPDATE tracker_jobs j
        SET status = tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets),
            reset_count = CASE WHEN f.retryable THEN j.reset_count + 1 ELSE j.reset_count END,
            completed_at = CASE
                WHEN tracker_rule_fail_status(f.retryable, j.reset_count, ok.max_resets) = 'todo'
                THEN NULL ELSE $9 END,
            execution_error = f.error::jsonb,
            attempt_id = NULL, worker_id = NULL, last_worker_id = j.worker_id, lease_expires_at = NULL, updated_at = $9
        FROM firsts f, ok
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_failed))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $4
          AND j.lease_expires_at > $9
        RETURNING f.ord, j.status
     ),
     counted AS (
        INSERT INTO tracker_job_count_deltas (project_id, status, n)
        SELECT $2, s.status, sum(s.n) FROM failed d, LATERAL (VALUES ('wip', -1), (d.status, 1)) AS s(status, n)
        WHERE current_setting('hq.counted', true) = 'on'
        GROUP BY s.status
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok),
       ARRAY(SELECT d.status FROM input i LEFT JOIN failed d ON d.ord = i.ord ORDER BY i.ord);
    END IF;
END
$fn$;

-- sql/worker_one.sql block gate_row, verbatim.
-- sql/worker_one.sql block extend_one (a batch of one) and sql/worker_ops.sql block extend_op
-- (a larger one), renumbered: $1-$8 become $2, $4-$8, the gate's user, $9.
-- Their final SELECTs add the gate's columns.
CREATE OR REPLACE FUNCTION tracker_gated_extend(
    bytea, text, text, text, bigint[], text[], bigint, bigint, text[])
RETURNS TABLE (user_id text, user_status text, user_roles text[], project text,
               ran boolean, ok boolean, job_statuses text[])
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan
    SET enable_seqscan = off SET enable_bitmapscan = off SET hq.counted = on AS $fn$
#variable_conflict use_column
DECLARE
    g record;
BEGIN
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
            NULL::boolean, NULL::text[];
    ELSIF cardinality($5) = 1 THEN
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $8), updated_at = $7
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ($5::bigint[])[1] AND j.attempt_id = ($6::text[])[1]
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $7
        RETURNING j.status
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok), ARRAY[(SELECT d.status FROM extended d)];
    ELSE
        RETURN QUERY
WITH u AS (SELECT status, roles FROM tracker_users WHERE id = g.user_id),
     p AS (SELECT status FROM tracker_projects WHERE id = $2),
     ok AS (
        SELECT 1 FROM u, p
        WHERE tracker_rule_active_worker(u.status, u.roles) AND p.status = ANY ($9::text[])
     ),
     w AS (
        INSERT INTO tracker_workers (worker_id, user_id)
        SELECT $4, g.user_id FROM ok
        WHERE NOT EXISTS (SELECT FROM tracker_workers WHERE worker_id = $4 AND user_id = g.user_id)
        ON CONFLICT (worker_id) DO UPDATE SET user_id = EXCLUDED.user_id
        WHERE tracker_workers.user_id IS DISTINCT FROM EXCLUDED.user_id
        RETURNING 1
     ),
     input AS (
        SELECT * FROM unnest($5::bigint[], $6::text[])
            WITH ORDINALITY AS i(job_id, attempt_id, ord)
     ),
     firsts AS (
        SELECT * FROM tracker_rule_first_items($5::bigint[], $6::text[])
     ),
     locked_extended AS (
        SELECT j.job_id FROM tracker_jobs j
        WHERE EXISTS (SELECT 1 FROM ok) AND (SELECT count(*) FROM w) >= 0
          AND j.job_id = ANY ($5::bigint[])
          AND (j.project_id = $2) IS TRUE AND j.worker_id = $4 AND j.lease_expires_at > $7
        ORDER BY j.job_id
        FOR UPDATE
     ),
     extended AS (
        UPDATE tracker_jobs j
        SET lease_expires_at = GREATEST(j.lease_expires_at, $8), updated_at = $7
        FROM firsts f
        WHERE j.job_id = ANY (ARRAY(SELECT job_id FROM locked_extended))
          AND j.job_id = f.job_id AND j.attempt_id = f.attempt_id AND j.worker_id = $4
          AND j.lease_expires_at > $7
        RETURNING f.ord, j.status
     )
SELECT g.user_id, g.user_status, g.user_roles, NULL::text, true,
       EXISTS (SELECT 1 FROM ok),
       ARRAY(SELECT d.status FROM input i LEFT JOIN extended d ON d.ord = i.ord ORDER BY i.ord);
    END IF;
END
$fn$;
