-- Migration 0012: the jobs' tie to their project, checked once per statement, not per row.
--
-- The foreign key tracker_jobs.project_id → tracker_projects (the reference's, with ON DELETE
-- CASCADE) ran one RI query per inserted row: about a fifth of PostgreSQL's work per enqueued
-- or imported job (benchmarks/notes/source_import.md). The statement-level triggers that
-- already count every insert and every project deletion (0004) now keep the same two rules
-- for every writer (our SQL, COPY, manual SQL, a reference tracker sharing the database):
--
-- * An insert naming a project that does not exist fails with foreign_key_violation under the
--   old constraint's name (the adapter maps it to "project not found", as before). The check
--   locks each named project row FOR KEY SHARE, as the RI check did, so a concurrent project
--   delete waits for the inserting transaction, and an insert that waited for a delete sees
--   the project gone.
-- * Deleting a project deletes its jobs in the same statement's triggers (what the cascade
--   did). Their delete trigger appends no counts for a project that no longer exists.
--
-- Jobs never move between projects (no statement updates project_id), so updates need no
-- check.

ALTER TABLE tracker_jobs DROP CONSTRAINT IF EXISTS tracker_jobs_project_id_fkey;

CREATE OR REPLACE FUNCTION tracker_job_counts_ins() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    SELECT n.project_id INTO missing
    FROM (SELECT DISTINCT project_id FROM new_rows) AS n
    LEFT JOIN LATERAL (
        SELECT 1 AS found FROM tracker_projects p WHERE p.id = n.project_id FOR KEY SHARE
    ) AS p ON true
    WHERE p.found IS NULL
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'insert or update on table "tracker_jobs" violates foreign key constraint "tracker_jobs_project_id_fkey"'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'tracker_jobs_project_id_fkey',
                  TABLE = 'tracker_jobs',
                  DETAIL = format('Key (project_id)=(%s) is not present in table "tracker_projects".', missing);
    END IF;
    INSERT INTO tracker_job_count_deltas (project_id, status, n)
    SELECT project_id, status, count(*) FROM new_rows GROUP BY project_id, status;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_project_gone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tracker_jobs j USING old_projects o WHERE j.project_id = o.id;
    DELETE FROM tracker_job_count_deltas d USING old_projects o WHERE d.project_id = o.id;
    DELETE FROM tracker_job_counts c USING old_projects o WHERE c.project_id = o.id;
    RETURN NULL;
END
$$;
