-- Migration 0015: a claim's cached plan never sorts the project's queue (issue 12).
--
-- The claim functions read the head of the queue in index order: FIFO claims through
-- tracker_jobs_claim_idx (project_id, created_at, job_id), random ones through
-- tracker_jobs_claim_random_idx (project_id, random_key, job_id); both indexes cover exactly
-- the todo rows. Their generic plans are made at a connection's first claim after anything
-- invalidated them (a VACUUM or ANALYZE of tracker_jobs does), from whatever statistics exist
-- then. When those say the project holds about one todo row (a table vacuumed while empty and
-- filled since, with autovacuum not yet back), an explicit Sort of one row costs nothing, and
-- PostgreSQL may read the queue through the *other* claim index and sort it: the two paths
-- then differ by a few hundredths of a cost unit (the indexes' heights and sizes). Seen in
-- benchmarks.counts_http at B=4 W=4: every FIFO claim read and sorted all of its project's
-- 5,000-14,000 todo rows through the random index, 11-13 ms of PostgreSQL per claim, 650
-- instead of 2,200 jobs/s, until the next invalidation; at 10M todo jobs a claim would sort
-- 10M rows.
--
-- Both claim functions now plan with enable_sort = off, so a path that sorts costs more than
-- any path that reads an index in the order wanted: the queue is always read in index order,
-- whatever the statistics. Their other sorts (row_number over the few candidates, the final
-- order of the claimed rows) have no sort-free alternative, so no other choice changes. They
-- also plan with jit = off: the disabled sorts put the plans' estimated cost far above
-- jit_above_cost, and JIT compiling each plan took ~770 ms here. Per function, like their
-- other planner settings (0006, 0009): no session state, PgBouncer-safe.

ALTER FUNCTION tracker_claim_op_fifo(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_sort = off SET jit = off;
ALTER FUNCTION tracker_claim_op_random(text, text[], integer, text[], text, bigint, bigint, text, integer, text[])
    SET enable_sort = off SET jit = off;
