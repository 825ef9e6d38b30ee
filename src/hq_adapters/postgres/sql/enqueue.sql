-- name: enqueue_project
-- The target project under FOR KEY SHARE (what the jobs' foreign key takes anyway): a
-- concurrent project delete waits for this enqueue, while claims and PUTs, which lock the row
-- FOR NO KEY UPDATE, do not. An enqueue that read the project just before an archiving PUT
-- committed may still finish, like a request that arrived first.
SELECT * FROM tracker_projects WHERE id = $1 FOR KEY SHARE

-- name: enqueue_insert
-- Array insert of an already-collapsed batch in submission order (so job_id follows FIFO
-- order). ON CONFLICT DO NOTHING skips identities that exist (partial unique indexes); a
-- concurrent insert of the same identity makes us wait for its commit and then skip it.
-- Returns the identity columns of the rows actually inserted.
INSERT INTO tracker_jobs (project_id, external_id, value, unique_value_digest, random_key,
                          spec, status, reset_count, created_at, updated_at)
SELECT $1, i.external_id, i.value, i.digest, i.random_key, i.spec::jsonb, 'todo', 0, $7, $7
FROM unnest($2::text[], $3::text[], $4::bytea[], $5::int4[], $6::text[])
     WITH ORDINALITY AS i(external_id, value, digest, random_key, spec, ord)
ORDER BY i.ord
ON CONFLICT DO NOTHING
RETURNING external_id, unique_value_digest

-- name: enqueue_existing_by_external_id
-- Stored value/spec of identities that were not inserted, for the identity check (§2.6).
SELECT external_id, value, spec::text AS spec
FROM tracker_jobs WHERE project_id = $1 AND external_id = ANY($2::text[])

-- name: enqueue_existing_by_digest
-- Stored value/spec of unique_value identities that were not inserted.
SELECT unique_value_digest, value, spec::text AS spec
FROM tracker_jobs WHERE project_id = $1 AND unique_value_digest = ANY($2::bytea[])
