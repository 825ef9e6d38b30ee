"""Browser sessions, GitHub sign-in upserts and worker mappings (spec §2.10, §5.2–5.3)."""

from __future__ import annotations

from dataclasses import replace

from hq_adapters.memory.state import MemoryState, SessionRow
from hq_domain.clock import seconds
from hq_domain.errors import NotFound, PermissionDenied
from hq_domain.ports import WorkerMapping
from hq_domain.users import (
    User,
    UserStatus,
    first_github_login,
    github_id_taken,
    github_user_key,
    roles_after_admin_login,
)


def create_session(
    state: MemoryState, digest: bytes, user_id: str, expires_at: int, now_ns: int
) -> None:
    now_s = seconds(now_ns)
    if user_id not in state.users:
        raise NotFound("user not found")
    for d in [d for d, s in state.sessions.items() if s.expires_at <= now_s]:
        del state.sessions[d]
    state.sessions[digest] = SessionRow(user_id, now_s, expires_at)


def session_user(state: MemoryState, digest: bytes, now_ns: int) -> User | None:
    row = state.sessions.get(digest)
    if row is None or row.expires_at <= seconds(now_ns):
        return None
    user = state.users.get(row.user_id)
    return user if user is not None and user.status is UserStatus.ACTIVE else None


def delete_session(state: MemoryState, digest: bytes) -> None:
    state.sessions.pop(digest, None)


def _by_github_id(state: MemoryState, github_user_id: int) -> User | None:
    for user in state.users.values():
        if user.github_user_id == github_user_id:
            return user
    return None


def _claim_github_id(state: MemoryState, github_user_id: int) -> None:
    """``gh_<id>`` belongs to GitHub user ``id``: an unlinked local row of that id is not taken
    over (it may hold a machine token and history); the sign-in is refused instead."""
    local = state.users.get(github_user_key(github_user_id))
    if local is not None and local.github_user_id != github_user_id:
        raise PermissionDenied(github_id_taken(github_user_id))


def _new_github_user(
    github_user_id: int, login: str, avatar_url: str, team_member: bool, now_s: int
) -> User:
    status, roles = first_github_login(team_member)
    return User(
        id=github_user_key(github_user_id),
        status=status,
        roles=roles,
        github_user_id=github_user_id,
        github_login=login,
        github_avatar_url=avatar_url,
        last_login_at=now_s,
        created_at=now_s,
        updated_at=now_s,
    )


def upsert_github_admin(
    state: MemoryState, github_user_id: int, login: str, avatar_url: str, now_ns: int
) -> User:
    """A team member: active with ``admin`` added to the roles it had (an earlier local delete
    is undone); see ``roles_after_admin_login``."""
    now_s = seconds(now_ns)
    user = _by_github_id(state, github_user_id)
    if user is None:
        _claim_github_id(state, github_user_id)
        user = _new_github_user(github_user_id, login, avatar_url, True, now_s)
    else:
        user = replace(
            user,
            github_login=login,
            github_avatar_url=avatar_url,
            status=UserStatus.ACTIVE,
            roles=roles_after_admin_login(user.roles),
            last_login_at=now_s,
            updated_at=now_s,
        )
    state.users[user.id] = user
    return user


def upsert_github_worker(
    state: MemoryState, github_user_id: int, login: str, avatar_url: str, now_ns: int
) -> User:
    """A non-member: new rows are pending workers; existing rows keep status and roles."""
    now_s = seconds(now_ns)
    user = _by_github_id(state, github_user_id)
    if user is None:
        _claim_github_id(state, github_user_id)
        user = _new_github_user(github_user_id, login, avatar_url, False, now_s)
    else:
        user = replace(
            user,
            github_login=login,
            github_avatar_url=avatar_url,
            last_login_at=now_s,
            updated_at=now_s,
        )
    state.users[user.id] = user
    return user


def list_worker_mappings(
    state: MemoryState, worker_id: str | None, limit: int
) -> list[WorkerMapping]:
    if worker_id is not None:
        user_id = state.workers.get(worker_id)
        return [] if user_id is None else [WorkerMapping(worker_id, user_id)]
    return [WorkerMapping(w, state.workers[w]) for w in sorted(state.workers)[:limit]]
