-- Migration 0019: a claim's sweep reads only its own project's expired leases (issue 12).
--
-- The full claim (claim_op_fifo / claim_op_random, cached generic plans) sweeps a project's
-- expired leases in (lease_expires_at, job_id) order. Two indexes gave that order: the
-- per-project tracker_jobs_expired_order_idx and the global tracker_jobs_lease_sweep_order_idx
-- (the background sweep's and the expired-lease gauge's). A generic plan made while the table
-- was young (never analysed, a few hundred rows of one project) took the global one with
-- `project_id = $1` as a filter, and from then on each such claim read the expired leases of
-- every project that expired earlier until it had the sweep bound's worth of its own, until
-- the plan was invalidated (tests/integration/test_generic_plans.py, young-table case, with
-- 512 young rows). Putting project_id into the ORDER BY cannot steer it: a column equated to
-- a parameter drops out of the sort order.
--
-- The global index's predicate now also says `worker_id IS NOT NULL`. Every wip row has a
-- worker (the table's CHECK), so it holds the same rows; but a statement can use a partial
-- index only when its own WHERE implies the predicate, and the claims' sweeps (which do not
-- name worker_id) no longer do. sweep_expired and expired_wip_all (sql/worker.sql,
-- sql/observe.sql) say it and keep reading it. Rebuilding it scans tracker_jobs inside the
-- migration transaction, holding writes (1.1-1.3 s for 10M jobs, a 2.1 GB heap, read cold;
-- docs/operations.md).
DROP INDEX IF EXISTS tracker_jobs_lease_sweep_order_idx;
CREATE INDEX IF NOT EXISTS tracker_jobs_lease_sweep_order_idx
    ON tracker_jobs (lease_expires_at, job_id) WHERE status = 'wip' AND worker_id IS NOT NULL;
