-- Migration 0009: generic plans that cannot leave the batch, whatever the statistics were when
-- a server connection made them (issue 12).
--
-- The worker functions of 0006 keep one generic plan per server connection, made at the
-- connection's first request from the statistics of that moment. A profile of B=1 workers on a
-- young database (never analysed; the planner guesses 0.5 % of the table per project) found
-- every complete reading all of its project's jobs: the lock scan `job_id = ANY ($3) AND
-- project_id = $1 AND …` ran on (project_id, status, job_id), whose only usable key is the
-- project, and a claim plan made on a nearly empty table read the table sequentially. Both
-- grow with the project, and the plan stays until something invalidates it.
--
-- Two changes, each pinned by tests/integration/test_generic_plans.py (plans made on a young
-- table, then run on a grown one):
-- * tracker_jobs_project_status_idx (project_id, status, job_id) goes. Under a young table's
--   statistics any index led by project_id competes with the right one (the lock scans took
--   it over the primary key, a claim took it over the claim index, and an added (project_id,
--   job_id) index was scanned whole for one job id). The failure listings (recent failures,
--   ?status=failed|reset_exhausted) get a partial index that claims, completions and imports
--   never touch; every job now costs one index entry less at enqueue, claim and completion.
--   Listing a project's jobs without a status filter, or with done/todo/wip, pages through
--   the primary key (as the reference does): fast when the project's jobs are a good part of
--   the table, a scan of the rows between when they are not.
-- * The worker functions plan without sequential or bitmap scans (per function, like their
--   plan_cache_mode, so no session state): every table they read is reached through an index
--   on the request's keys, which is what the plans must do at any table size.
--
-- On a large table the CREATE INDEX scans tracker_jobs once inside the migration transaction
-- (writes wait): a few seconds per 10M jobs.

DROP INDEX IF EXISTS tracker_jobs_project_status_idx;
CREATE INDEX IF NOT EXISTS tracker_jobs_failures_idx
    ON tracker_jobs (project_id, status, job_id) WHERE status IN ('failed', 'reset_exhausted');

ALTER FUNCTION tracker_worker_gate(bytea, text)
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_complete_op(text, text, bigint[], text[], text[], text[], bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_fail_op(text, text, bigint[], text[], boolean[], text[], bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_extend_op(text, text, bigint[], text[], bigint, bigint, text, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gate_row(bytea, text, text)
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_claim(bytea, text, text, text, text[], integer, text[], text, bigint, bigint, integer, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_complete(bytea, text, text, text, bigint[], text[], text[], text[], bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_fail(bytea, text, text, text, bigint[], text[], boolean[], text[], bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
ALTER FUNCTION tracker_gated_extend(bytea, text, text, text, bigint[], text[], bigint, bigint, text[])
    SET enable_seqscan = off SET enable_bitmapscan = off;
