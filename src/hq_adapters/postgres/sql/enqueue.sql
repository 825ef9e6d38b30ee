-- name: enqueue_project
-- The target project under FOR KEY SHARE (what the insert trigger takes anyway, 0012): a
-- concurrent project delete waits for this enqueue, while claims and PUTs, which lock the row
-- FOR NO KEY UPDATE, do not. An enqueue that read the project just before an archiving PUT
-- committed may still finish, like a request that arrived first.
SELECT * FROM tracker_projects WHERE id = $1 FOR KEY SHARE

-- name: enqueue_insert_external_id
-- The batch arrives as JSON arrays (identities, values, random keys, specs; digests in hex),
-- not as array parameters: asyncpg type-probes every element of an array parameter, 3.4 ms of
-- client CPU per 1,000 jobs against 0.4 ms to encode JSON, for 0.5 ms more server CPU.
-- identity_mode external_id, one round trip per already-collapsed batch: look every identity
-- up (one unique-index probe each: the LATERAL ... LIMIT 1 cannot be flattened into a join,
-- so stale statistics cannot turn it into a scan of the project), insert in submission order
-- the ones not found, and compare the found ones with the stored value and spec in SQL
-- (jsonb equality: key order and number spelling ignored, as §2.6 wants). A re-run of a
-- source therefore costs one probe per job and decodes nothing in Python. ON CONFLICT DO
-- NOTHING covers an identity committed by someone else after this statement's snapshot: it
-- then shows up as neither inserted nor present and the caller verifies it separately.
-- conflict is NULL, or 'value'/'spec' for the first found identity (by position) that differs.
-- $7: the batch's reserved job ids (JSON array, an import's commit line: reserve_job_ids) or
-- NULL for the sequence's next value; PostgreSQL evaluates the volatile nextval after the sort,
-- so new rows take ids in submission order either way.
-- $8: random_queue, true when the project claims in random order (migration 0016).
WITH i AS MATERIALIZED (
    SELECT i.external_id, i.value, i.random_key::int4 AS random_key, i.spec,
           i.job_id::int8 AS job_id, i.ord
    FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
                    json_array_elements_text($4::json), json_array_elements_text($5::json),
                    json_array_elements_text($7::json))
        WITH ORDINALITY AS i(external_id, value, random_key, spec, job_id, ord)
), found AS MATERIALIZED (
    SELECT i.ord, t.value = i.value AS same_value, t.spec = i.spec::jsonb AS same_spec
    FROM i CROSS JOIN LATERAL (
        SELECT t.value, t.spec FROM tracker_jobs t
        WHERE t.project_id = $1 AND t.external_id = i.external_id
        LIMIT 1
    ) t
), ins AS (
    INSERT INTO tracker_jobs (job_id, project_id, external_id, value, random_key, spec, status,
                              reset_count, created_at, updated_at, random_queue)
    SELECT COALESCE(i.job_id, nextval('tracker_jobs_job_id_seq')), $1, i.external_id, i.value,
           i.random_key, i.spec::jsonb, 'todo', 0, $6, $6, $8
    FROM i WHERE NOT EXISTS (SELECT FROM found f WHERE f.ord = i.ord)
    ORDER BY i.ord
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins)::int AS inserted,
       (SELECT count(*) FROM found)::int AS present,
       (SELECT CASE WHEN f.same_value THEN 'spec' ELSE 'value' END FROM found f
        WHERE NOT (f.same_value AND f.same_spec) ORDER BY f.ord LIMIT 1) AS conflict


-- name: enqueue_insert_unique_value
-- identity_mode unique_value: the same statement keyed by the value digest.
WITH i AS MATERIALIZED (
    SELECT decode(i.digest, 'hex') AS digest, i.value, i.random_key::int4 AS random_key, i.spec,
           i.job_id::int8 AS job_id, i.ord
    FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
                    json_array_elements_text($4::json), json_array_elements_text($5::json),
                    json_array_elements_text($7::json))
        WITH ORDINALITY AS i(digest, value, random_key, spec, job_id, ord)
), found AS MATERIALIZED (
    SELECT i.ord, t.value = i.value AS same_value, t.spec = i.spec::jsonb AS same_spec
    FROM i CROSS JOIN LATERAL (
        SELECT t.value, t.spec FROM tracker_jobs t
        WHERE t.project_id = $1 AND t.unique_value_digest = i.digest
        LIMIT 1
    ) t
), ins AS (
    INSERT INTO tracker_jobs (job_id, project_id, unique_value_digest, value, random_key, spec, status,
                              reset_count, created_at, updated_at, random_queue)
    SELECT COALESCE(i.job_id, nextval('tracker_jobs_job_id_seq')), $1, i.digest, i.value,
           i.random_key, i.spec::jsonb, 'todo', 0, $6, $6, $8
    FROM i WHERE NOT EXISTS (SELECT FROM found f WHERE f.ord = i.ord)
    ORDER BY i.ord
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins)::int AS inserted,
       (SELECT count(*) FROM found)::int AS present,
       (SELECT CASE WHEN f.same_value THEN 'spec' ELSE 'value' END FROM found f
        WHERE NOT (f.same_value AND f.same_spec) ORDER BY f.ord LIMIT 1) AS conflict


-- name: enqueue_present_external_id
-- Whether a checked batch is all there already (a re-run's every batch): the identities found,
-- and the first found one (by position) whose stored value or spec differs, as in
-- enqueue_insert_external_id. When every identity is found and none differs, the caller is
-- done: no insert, no anti-join, and no random keys or reserved ids to send and parse; a
-- batch of a re-run costs PostgreSQL about a tenth less (benchmarks/notes). Otherwise it runs
-- the inserting statement, which probes again.
WITH i AS MATERIALIZED (
    SELECT i.external_id, i.value, i.spec, i.ord
    FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
                    json_array_elements_text($4::json))
        WITH ORDINALITY AS i(external_id, value, spec, ord)
), found AS MATERIALIZED (
    SELECT i.ord, t.value = i.value AS same_value, t.spec = i.spec::jsonb AS same_spec
    FROM i CROSS JOIN LATERAL (
        SELECT t.value, t.spec FROM tracker_jobs t
        WHERE t.project_id = $1 AND t.external_id = i.external_id
        LIMIT 1
    ) t
)
SELECT (SELECT count(*) FROM found)::int AS present,
       (SELECT CASE WHEN f.same_value THEN 'spec' ELSE 'value' END FROM found f
        WHERE NOT (f.same_value AND f.same_spec) ORDER BY f.ord LIMIT 1) AS conflict

-- name: enqueue_present_unique_value
-- enqueue_present_external_id keyed by the value digest.
WITH i AS MATERIALIZED (
    SELECT decode(i.digest, 'hex') AS digest, i.value, i.spec, i.ord
    FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
                    json_array_elements_text($4::json))
        WITH ORDINALITY AS i(digest, value, spec, ord)
), found AS MATERIALIZED (
    SELECT i.ord, t.value = i.value AS same_value, t.spec = i.spec::jsonb AS same_spec
    FROM i CROSS JOIN LATERAL (
        SELECT t.value, t.spec FROM tracker_jobs t
        WHERE t.project_id = $1 AND t.unique_value_digest = i.digest
        LIMIT 1
    ) t
)
SELECT (SELECT count(*) FROM found)::int AS present,
       (SELECT CASE WHEN f.same_value THEN 'spec' ELSE 'value' END FROM found f
        WHERE NOT (f.same_value AND f.same_spec) ORDER BY f.ord LIMIT 1) AS conflict

-- name: enqueue_conflict_external_id
-- Re-check after a race (an identity committed by another enqueue after the insert's
-- snapshot): the first identity of the batch whose stored row differs, as above.
SELECT CASE WHEN t.value = i.value THEN 'spec' ELSE 'value' END AS conflict
FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
               json_array_elements_text($4::json)) WITH ORDINALITY AS i(external_id, value, spec, ord)
CROSS JOIN LATERAL (
    SELECT t.value, t.spec FROM tracker_jobs t
    WHERE t.project_id = $1 AND t.external_id = i.external_id
    LIMIT 1
) t
WHERE NOT (t.value = i.value AND t.spec = i.spec::jsonb)
ORDER BY i.ord
LIMIT 1

-- name: enqueue_conflict_unique_value
-- The same re-check keyed by the value digest.
SELECT CASE WHEN t.value = i.value THEN 'spec' ELSE 'value' END AS conflict
FROM ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json),
               json_array_elements_text($4::json)) WITH ORDINALITY AS i(digest, value, spec, ord)
CROSS JOIN LATERAL (
    SELECT t.value, t.spec FROM tracker_jobs t
    WHERE t.project_id = $1 AND t.unique_value_digest = decode(i.digest, 'hex')
    LIMIT 1
) t
WHERE NOT (t.value = i.value AND t.spec = i.spec::jsonb)
ORDER BY i.ord
LIMIT 1

-- name: reserve_job_ids
-- n job ids, ascending, for an import group that inserts its rows with them (migration 0014).
-- nextval is never rolled back, so ids reserved for a transaction that is redone stay valid.
SELECT array(SELECT nextval('tracker_jobs_job_id_seq') FROM generate_series(1, $1::int))

-- name: enqueue_lock_timeout
-- A transaction in an import's commit line waits for the line in Python, where PostgreSQL's
-- deadlock detector cannot see it; a lock wait of a few seconds means a cycle through that
-- wait (or a writer holding rows that long), and the import redoes the group on its own.
SELECT set_config('lock_timeout', '5s', true)
