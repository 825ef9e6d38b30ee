-- Migration 0010: resets in the per-project history, and jobs done per worker (issue 14).
--
-- 1. A running total of resets per project. A reset (hq_domain.lifecycle: a retryable
-- failure or a lease expiry, by the sweep or by a claim) is the only transition that raises
-- reset_count, and it leaves no trace in the five status counts. A ROW-level trigger appends
-- (project, 'resets', 1) to tracker_job_count_deltas for each row whose reset_count went up;
-- the fold of migration 0004 adds it to tracker_job_counts like the status counts, and
-- record_history copies it into tracker_project_history.resets. Its WHEN clause is evaluated
-- per row without calling a function, and UPDATE OF reset_count skips statements that do not
-- set the column (lease extensions), so claims and completions that reset nothing pay only
-- that comparison. A requeue sets reset_count to 0 and is not a reset. The total only grows:
-- deleting jobs does not lower it (the 0004 delete trigger counts statuses only); a project
-- delete removes it with the project's other rows; a TRUNCATE of the jobs starts it again.
-- Readers of tracker_job_counts pick statuses by name (FILTER / a status list), so the
-- pseudo-status 'resets' never reaches a status count or a total.
CREATE OR REPLACE FUNCTION tracker_job_resets() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    VALUES (NEW.project_id, 'resets', 1);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tracker_job_resets ON tracker_jobs;
CREATE TRIGGER tracker_job_resets AFTER UPDATE OF reset_count ON tracker_jobs
    FOR EACH ROW WHEN (NEW.reset_count > OLD.reset_count)
    EXECUTE FUNCTION tracker_job_resets();

ALTER TABLE tracker_project_history ADD COLUMN IF NOT EXISTS resets bigint NOT NULL DEFAULT 0;

-- 2. Jobs done and failed per worker and minute. Each server process counts in memory what
-- its complete and fail routes applied, per (project, worker), and its background loop adds
-- the counts here every history interval (INSERT … ON CONFLICT adding), so nothing is written
-- on the request path; counts of a process that dies before its flush are lost (≤ one
-- interval), and a reference tracker sharing the database is not counted. Kept for
-- hq_domain.progress.WORKER_MINUTE_RETENTION_S; deleted with the project.
CREATE TABLE IF NOT EXISTS tracker_worker_minutes (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    worker_id text NOT NULL,
    minute_s bigint NOT NULL,
    done bigint NOT NULL,
    failed bigint NOT NULL,
    PRIMARY KEY (project_id, minute_s, worker_id)
);
-- The all-projects read (/admin/workers) and the retention prune go by minute.
CREATE INDEX IF NOT EXISTS tracker_worker_minutes_minute_idx ON tracker_worker_minutes (minute_s);
