-- Migration 0002: later reference versions added tracker_workers.last_seen_at bigint NOT NULL
-- without a default. We do not track it, so new mappings would violate NOT NULL: give it a
-- default (insert time) so our upserts work and the reference can still read every row.
-- A no-op on databases without that column.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'tracker_workers'
                 AND column_name = 'last_seen_at') THEN
        ALTER TABLE tracker_workers
            ALTER COLUMN last_seen_at SET DEFAULT EXTRACT(EPOCH FROM clock_timestamp())::bigint;
    END IF;
END
$$;
