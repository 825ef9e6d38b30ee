-- Migration 0007: remember which worker ended a job's last attempt. worker_id is NULL outside
-- WIP (spec §2.1), so a failed job could not say which worker failed it. The complete, fail
-- and expiry statements copy worker_id here as they clear it; no index, so their updates
-- stay HOT. Not part of any wire object; the dashboard's job page shows it. A nullable column
-- without a default is a catalogue-only change, and the reference's statements (explicit
-- column lists) neither read nor write it (D7).
ALTER TABLE tracker_jobs ADD COLUMN IF NOT EXISTS last_worker_id text;
