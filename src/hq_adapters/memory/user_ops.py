"""Users, machine tokens and token lookup on the in-memory state (spec §1.5, §1.7.9, §2.11)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hq_adapters.memory.state import MemoryState, TokenRow
from hq_domain.clock import seconds
from hq_domain.errors import NotFound
from hq_domain.ids import MAX_MACHINE_TOKEN_CHARS, machine_token_digest
from hq_domain.users import Principal, Role, User, UserListItem, UserStatus


def principal_for_token(state: MemoryState, token: str) -> Principal | None:
    """Digest lookup; user status and roles are reported, not checked."""
    if not token or len(token) > MAX_MACHINE_TOKEN_CHARS:
        return None
    user_id = state.token_owner.get(machine_token_digest(token))
    if user_id is None:
        return None
    row = state.tokens[user_id]
    if row.revoked_at is not None:
        return None
    user = state.users[user_id]
    return Principal(user.id, user.status, frozenset(user.roles))


def list_users(state: MemoryState) -> list[UserListItem]:
    items = []
    for user_id in sorted(state.users):
        row = state.tokens.get(user_id)
        active = row is not None and row.revoked_at is None
        viewable = active and bool(row.plaintext)  # type: ignore[union-attr]
        items.append(UserListItem(state.users[user_id], active, viewable))
    return items


def put_user(
    state: MemoryState, user_id: str, status: UserStatus, roles: Sequence[Role], now_ns: int
) -> User:
    """Create or update status and roles; GitHub fields, tokens and sessions are untouched."""
    now_s = seconds(now_ns)
    roles_t = tuple(sorted(set(roles)))
    user = state.users.get(user_id)
    if user is None:
        user = User(user_id, status, roles_t, None, None, None, None, now_s, now_s)
    else:
        user = replace(user, status=status, roles=roles_t, updated_at=now_s)
    state.users[user_id] = user
    return user


def delete_user(state: MemoryState, user_id: str) -> None:
    if user_id not in state.users:
        raise NotFound("user not found")
    del state.users[user_id]
    row = state.tokens.pop(user_id, None)
    if row is not None:
        state.token_owner.pop(row.digest, None)
    for digest in [d for d, s in state.sessions.items() if s.user_id == user_id]:
        del state.sessions[digest]
    for worker_id in [w for w, u in state.workers.items() if u == user_id]:
        del state.workers[worker_id]


def get_machine_token(state: MemoryState, user_id: str) -> str | None:
    row = state.tokens.get(user_id)
    if row is None or row.revoked_at is not None:
        return None
    return row.plaintext


def set_machine_token(state: MemoryState, user_id: str, token: str, now_ns: int) -> None:
    """Replace (and un-revoke) the user's only token; the old one stops working at once."""
    if user_id not in state.users:
        raise NotFound("user not found")
    digest = machine_token_digest(token)
    old = state.tokens.get(user_id)
    if old is not None:
        state.token_owner.pop(old.digest, None)
    other = state.token_owner.get(digest)
    if other is not None and other != user_id:
        # token_hash is unique: the token moves to this user (never shared by two users).
        del state.tokens[other]
    state.tokens[user_id] = TokenRow(digest, token, seconds(now_ns))
    state.token_owner[digest] = user_id


def revoke_machine_token(state: MemoryState, user_id: str, now_ns: int) -> None:
    row = state.tokens.get(user_id)
    if row is None or row.revoked_at is not None:
        raise NotFound("active machine token not found")
    row.revoked_at = seconds(now_ns)


def bootstrap_user(
    state: MemoryState, user_id: str, roles: Sequence[Role], token: str, now_ns: int
) -> None:
    put_user(state, user_id, UserStatus.ACTIVE, roles, now_ns)
    set_machine_token(state, user_id, token, now_ns)
