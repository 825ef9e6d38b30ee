-- Migration 0004: exact, O(1) per-project job counts (issue 14).
--
-- Statement-level AFTER triggers with transition tables on tracker_jobs append one row per
-- (project, status) a statement changed, with the signed change, to tracker_job_count_deltas:
-- a heap without indexes that is only ever appended to by writers, so writers never wait on
-- each other for it (no hot row, no lock at all) and an append costs about a third of an
-- upsert into a keyed counter table (measured: docs/metrics.md). An UPDATE that changes no
-- status (a lease extension) appends nothing. Every writer is counted: our SQL, COPY imports,
-- a reference tracker sharing the database, manual SQL.
--
-- The background loop of every server process folds the deltas into tracker_job_counts
-- (project, status) every few seconds, in one statement (DELETE … RETURNING feeding an
-- upsert), so a reader that sums both tables in one statement sees one snapshot: exact as of
-- its statement, and O(1) in the number of jobs (it reads 5 counter rows per project plus the
-- deltas appended since the last fold). If no server folds (only a reference tracker runs),
-- reads stay exact and slow down with the pending deltas until a server starts.
--
-- No foreign keys (an FK check would lock the project row at every claim): a project's rows
-- go with it by the trigger at the end of this file, the delete trigger appends nothing for a
-- project deleted in the same transaction, and the fold drops deltas of projects that are gone.
--
-- Backfill: one GROUP BY over tracker_jobs (a sequential scan, a few seconds per 10M rows)
-- inside the migration transaction, under a SHARE lock on tracker_jobs so that no write is
-- counted twice or missed (writes wait for the migration).

CREATE TABLE IF NOT EXISTS tracker_job_counts (
    project_id text NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (project_id, status)
);
CREATE TABLE IF NOT EXISTS tracker_job_count_deltas (
    project_id text NOT NULL,
    status text NOT NULL,
    n bigint NOT NULL
);

LOCK TABLE tracker_jobs IN SHARE MODE;
DELETE FROM tracker_job_count_deltas;
DELETE FROM tracker_job_counts;
INSERT INTO tracker_job_counts (project_id, status, n)
SELECT project_id, status, count(*) FROM tracker_jobs GROUP BY project_id, status;

CREATE OR REPLACE FUNCTION tracker_job_counts_ins() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    SELECT project_id, status, count(*) FROM new_rows GROUP BY project_id, status;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_del() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    SELECT project_id, status, -count(*)
    FROM old_rows o
    -- A project deleted by this transaction: its rows go (project_gone), write none back.
    WHERE EXISTS (SELECT 1 FROM tracker_projects p WHERE p.id = o.project_id)
    GROUP BY project_id, status;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_upd() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    SELECT project_id, status, sum(d)
    FROM (SELECT project_id, status, 1 AS d FROM new_rows
          UNION ALL
          SELECT project_id, status, -1 FROM old_rows) AS t
    GROUP BY project_id, status
    HAVING sum(d) <> 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tracker_job_count_deltas;
    DELETE FROM tracker_job_counts;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_project_gone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tracker_job_count_deltas d USING old_projects o WHERE d.project_id = o.id;
    DELETE FROM tracker_job_counts c USING old_projects o WHERE c.project_id = o.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tracker_job_counts_ins ON tracker_jobs;
CREATE TRIGGER tracker_job_counts_ins AFTER INSERT ON tracker_jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tracker_job_counts_ins();
DROP TRIGGER IF EXISTS tracker_job_counts_del ON tracker_jobs;
CREATE TRIGGER tracker_job_counts_del AFTER DELETE ON tracker_jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tracker_job_counts_del();
DROP TRIGGER IF EXISTS tracker_job_counts_upd ON tracker_jobs;
CREATE TRIGGER tracker_job_counts_upd AFTER UPDATE ON tracker_jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION tracker_job_counts_upd();
DROP TRIGGER IF EXISTS tracker_job_counts_truncate ON tracker_jobs;
CREATE TRIGGER tracker_job_counts_truncate AFTER TRUNCATE ON tracker_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tracker_job_counts_truncate();
-- The cascade's job deletions may fire their statement trigger before or after this one (RI
-- cascades queue their AFTER events on the outer statement): the delete trigger above skips
-- projects that no longer exist, and this one removes whatever rows the project had.
DROP TRIGGER IF EXISTS tracker_job_counts_project_gone ON tracker_projects;
CREATE TRIGGER tracker_job_counts_project_gone AFTER DELETE ON tracker_projects
    REFERENCING OLD TABLE AS old_projects
    FOR EACH STATEMENT EXECUTE FUNCTION tracker_job_counts_project_gone();
