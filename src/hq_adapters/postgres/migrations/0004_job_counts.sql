-- Migration 0004: exact, O(1) per-project job counts (issue 14).
--
-- tracker_job_counts holds signed deltas per (project, status, shard); a project's count of a
-- status is the sum over its shards. The shard is the writing backend's pid, so a counter row
-- is only ever locked by the one backend whose pid it carries: no two claims, completions or
-- sweeps ever wait on each other for a counter row (no hot row, no deadlock between counter
-- rows), whatever the pool size or the number of tracker processes and replicas. Readers sum
-- at most 5 × (live backends + 1) rows per project; the background loop folds the rows of
-- backends that have gone away into shard 0 (compact_job_counts below), so the number of rows
-- stays bounded by the connections in use, not by the jobs.
--
-- Statement-level AFTER triggers with transition tables maintain the deltas, so every writer
-- is counted: our SQL, COPY imports, a reference tracker sharing the database, manual SQL.
-- One statement writes one upsert per (project, status) it changed; an UPDATE that does not
-- change a status (a lease extension) writes nothing. No foreign key on project_id: an FK
-- check would take a KEY SHARE lock on the project row at every claim. A project's rows are
-- deleted by a trigger on tracker_projects (see the end of this file);
-- readers join from tracker_projects, so a leftover row is never shown.
--
-- Backfill: one GROUP BY over tracker_jobs at migration time (a sequential scan: about
-- 2-4 s per 10M rows on a laptop-class machine), inside the migration transaction, which
-- holds a SHARE lock on tracker_jobs so that no write is counted twice or missed.

CREATE TABLE IF NOT EXISTS tracker_job_counts (
    project_id text NOT NULL,
    status text NOT NULL,
    shard integer NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (project_id, status, shard)
) WITH (fillfactor = 50);

LOCK TABLE tracker_jobs IN SHARE MODE;
DELETE FROM tracker_job_counts;
INSERT INTO tracker_job_counts (project_id, status, shard, n)
SELECT project_id, status, 0, count(*) FROM tracker_jobs GROUP BY project_id, status;

CREATE OR REPLACE FUNCTION tracker_job_counts_ins() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_counts AS c (project_id, status, shard, n)
    SELECT project_id, status, pg_backend_pid(), count(*)
    FROM new_rows GROUP BY project_id, status ORDER BY project_id, status
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_del() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_counts AS c (project_id, status, shard, n)
    SELECT project_id, status, pg_backend_pid(), -count(*)
    FROM old_rows o
    -- A project deleted by this transaction: its rows go (project_gone), write none back.
    WHERE EXISTS (SELECT 1 FROM tracker_projects p WHERE p.id = o.project_id)
    GROUP BY project_id, status ORDER BY project_id, status
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_upd() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tracker_job_counts AS c (project_id, status, shard, n)
    SELECT project_id, status, pg_backend_pid(), sum(d)
    FROM (SELECT project_id, status, 1 AS d FROM new_rows
          UNION ALL
          SELECT project_id, status, -1 FROM old_rows) AS t
    GROUP BY project_id, status
    HAVING sum(d) <> 0
    ORDER BY project_id, status
    ON CONFLICT (project_id, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tracker_job_counts;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tracker_job_counts_project_gone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
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
