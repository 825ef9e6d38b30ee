-- name: delete_expired_sessions
-- Opportunistic cleanup when a session is created (deletes only dead rows).
DELETE FROM tracker_web_sessions WHERE expires_at <= $1

-- name: create_session
-- Store a session digest (primary key; a clash is a programming error, not a race).
INSERT INTO tracker_web_sessions (token_hash, user_id, created_at, expires_at)
VALUES ($1, $2, $3, $4)

-- name: session_user
-- The active user of a live session (plain read).
SELECT u.*
FROM tracker_web_sessions s
JOIN tracker_users u ON u.id = s.user_id
WHERE s.token_hash = $1 AND s.expires_at > $2 AND u.status = 'active'

-- name: delete_session
-- Sign out: remove one session row.
DELETE FROM tracker_web_sessions WHERE token_hash = $1

-- name: github_admin_update
-- Team member with a known GitHub id: refresh profile, make active, add admin to the roles it
-- has (tracker_rule_admin_login_roles, migration 0008: hq_domain.users.roles_after_admin_login;
-- locks that row).
UPDATE tracker_users
SET github_login = $2, github_avatar_url = $3, status = 'active',
    roles = tracker_rule_admin_login_roles(roles),
    last_login_at = $4, updated_at = $4
WHERE github_user_id = $1
RETURNING *

-- name: github_worker_update
-- Non-member with a known GitHub id: refresh profile only (status and roles kept).
UPDATE tracker_users
SET github_login = $2, github_avatar_url = $3, last_login_at = $4, updated_at = $4
WHERE github_user_id = $1
RETURNING *

-- name: github_insert
-- First sign-in: a new user $5 (gh_<id>) with the status $6 and roles $7 that
-- hq_domain.users.first_github_login gives a team member (active admin) or a non-member
-- (pending worker). A local row that already has that id (no GitHub link) is left alone: no
-- row comes back and the caller refuses the sign-in. Two concurrent first sign-ins: the loser
-- re-runs the update and finds the row.
INSERT INTO tracker_users (id, status, roles, github_user_id, github_login, github_avatar_url,
                           last_login_at, created_at, updated_at)
VALUES ($5, $6, $7::text[], $1, $2, $3, $4, $4, $4)
ON CONFLICT (id) DO NOTHING
RETURNING *

-- name: worker_mapping
-- Exact worker_id lookup (primary key).
SELECT worker_id, user_id FROM tracker_workers WHERE worker_id = $1

-- name: worker_mappings
-- First mappings ordered by worker_id (primary key order).
SELECT worker_id, user_id FROM tracker_workers ORDER BY worker_id LIMIT $1
