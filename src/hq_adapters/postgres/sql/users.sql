-- name: principal_for_token
-- Owner of a non-revoked machine token, looked up by digest (unique index; read only).
SELECT u.id, u.status, u.roles
FROM tracker_machine_tokens t
JOIN tracker_users u ON u.id = t.user_id
WHERE t.token_hash = $1 AND t.revoked_at IS NULL

-- name: list_users
-- Every user with its token flags, sorted by id (plain read; no locks needed).
SELECT u.*,
       (t.user_id IS NOT NULL AND t.revoked_at IS NULL) AS machine_token_active,
       (t.user_id IS NOT NULL AND t.revoked_at IS NULL AND t.token IS NOT NULL)
           AS machine_token_viewable
FROM tracker_users u
LEFT JOIN tracker_machine_tokens t ON t.user_id = u.id
ORDER BY u.id

-- name: get_user
-- One user row (plain read).
SELECT * FROM tracker_users WHERE id = $1

-- name: put_user
-- Create or update status and roles; GitHub fields untouched (the upsert locks the one row).
INSERT INTO tracker_users (id, status, roles, created_at, updated_at)
VALUES ($1, $2, $3::text[], $4, $4)
ON CONFLICT (id) DO UPDATE
SET status = EXCLUDED.status, roles = EXCLUDED.roles, updated_at = EXCLUDED.updated_at

-- name: delete_user
-- Delete a user; tokens, sessions and worker mappings go by ON DELETE CASCADE.
DELETE FROM tracker_users WHERE id = $1 RETURNING id

-- name: get_machine_token
-- Plaintext of the user's active token (plain read).
SELECT token FROM tracker_machine_tokens WHERE user_id = $1 AND revoked_at IS NULL

-- name: release_token_hash
-- token_hash is unique: a token being installed for one user stops belonging to any other
-- (runs in the same transaction as set_machine_token, which rolls it back for unknown users).
DELETE FROM tracker_machine_tokens WHERE token_hash = $2 AND user_id <> $1

-- name: set_machine_token
-- Install the user's only token, un-revoked; inserts nothing when the user does not exist.
-- The upsert on the user_id primary key serialises concurrent rotations of one user.
INSERT INTO tracker_machine_tokens (user_id, token_hash, token, created_at, revoked_at)
SELECT u.id, $2, $3, $4, NULL FROM tracker_users u WHERE u.id = $1
ON CONFLICT (user_id) DO UPDATE
SET token_hash = EXCLUDED.token_hash, token = EXCLUDED.token,
    created_at = EXCLUDED.created_at, revoked_at = NULL
RETURNING user_id

-- name: revoke_machine_token
-- Mark the active token revoked; the row update locks it, so a second revoke finds nothing.
UPDATE tracker_machine_tokens SET revoked_at = $2
WHERE user_id = $1 AND revoked_at IS NULL
RETURNING user_id

-- name: bootstrap_user
-- Create or update the user as active with exactly the given roles (row lock via upsert).
INSERT INTO tracker_users (id, status, roles, created_at, updated_at)
VALUES ($1, 'active', $2::text[], $3, $3)
ON CONFLICT (id) DO UPDATE
SET status = 'active', roles = EXCLUDED.roles, updated_at = EXCLUDED.updated_at
