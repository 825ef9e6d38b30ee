-- Migration 0005: per-minute snapshots of each project's job counts (issue 14), written by the
-- background loop (never by a request) with INSERT … ON CONFLICT on (project, minute), so any
-- number of processes and replicas can write the same minute. Retention (hq_domain.progress):
-- every minute for 7 days, then the top-of-hour snapshot. Deleted with the project.
CREATE TABLE IF NOT EXISTS tracker_project_history (
    project_id text NOT NULL REFERENCES tracker_projects (id) ON DELETE CASCADE,
    minute_s bigint NOT NULL,
    todo bigint NOT NULL,
    wip bigint NOT NULL,
    done bigint NOT NULL,
    failed bigint NOT NULL,
    reset_exhausted bigint NOT NULL,
    PRIMARY KEY (project_id, minute_s)
);
