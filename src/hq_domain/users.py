"""Users, roles, statuses and the principal a machine token resolves to (spec §1.5, §2.11)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from hq_domain.errors import InvalidRequest, PermissionDenied
from hq_domain.ids import is_id


class UserStatus(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    SUSPENDED = "suspended"


class Role(StrEnum):
    ADMIN = "admin"
    WORKER = "worker"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a valid, non-revoked machine token belongs to (status and roles are not checked)."""

    user_id: str
    status: UserStatus
    roles: frozenset[Role]

    @property
    def is_active_admin(self) -> bool:
        return self.status is UserStatus.ACTIVE and Role.ADMIN in self.roles

    @property
    def is_active_worker(self) -> bool:
        return is_active_worker(self.status, self.roles)


@dataclass(frozen=True, slots=True)
class User:
    id: str
    status: UserStatus
    roles: tuple[Role, ...]  # sorted
    github_user_id: int | None
    github_login: str | None
    github_avatar_url: str | None
    last_login_at: int | None
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class UserListItem:
    """A user as the admin list shows it (spec §1.7.9)."""

    user: User
    machine_token_active: bool
    machine_token_viewable: bool


def require_admin(principal: Principal) -> None:
    if not principal.is_active_admin:
        raise PermissionDenied("active admin role required")


def is_active_worker(status: str, roles: Collection[str]) -> bool:
    """The worker routes' user check (spec §1.6 step 2): status ``active`` and the ``worker``
    role. SQL: ``tracker_rule_active_worker`` (migration 0008)."""
    return status == UserStatus.ACTIVE and Role.WORKER in roles


def require_worker(status: UserStatus, roles: frozenset[Role] | tuple[Role, ...]) -> None:
    if not is_active_worker(status, roles):
        raise PermissionDenied("active worker role required")


def roles_after_admin_login(roles: tuple[Role, ...]) -> tuple[Role, ...]:
    """A GitHub admin-team member's sign-in adds ``admin`` and keeps every other role.

    The reference replaces the roles with exactly ``[admin]`` (spec §5.3 item 6), so each
    sign-in silently dropped a ``worker`` role another admin had granted. Team membership
    asserts admin, nothing more; an admin can grant itself any role anyway, so keeping them
    gives nothing away (docs/web.md, "Sign-in and roles"). Sorted by code point; SQL:
    ``tracker_rule_admin_login_roles`` (migration 0008).
    """
    return tuple(sorted({*roles, Role.ADMIN}))


def github_user_key(github_user_id: int) -> str:
    """The user id a first GitHub sign-in creates: ``gh_<GitHub user id>``."""
    return f"gh_{github_user_id}"


def first_github_login(team_member: bool) -> tuple[UserStatus, tuple[Role, ...]]:
    """Status and roles of the user a first GitHub sign-in creates (spec §5.3): a member of the
    admin team is an active admin, anyone else a pending worker an admin must activate."""
    if team_member:
        return UserStatus.ACTIVE, (Role.ADMIN,)
    return UserStatus.PENDING, (Role.WORKER,)


def validate_user_put(
    user_id: str, status: str, roles: list[str] | None
) -> tuple[UserStatus, tuple[Role, ...]]:
    """PUT user validation (spec §1.7.9): returns the status and sorted, unique roles."""
    if not is_id(user_id) or status not in UserStatus.__members__.values():
        raise InvalidRequest("invalid user")
    roles = roles or []
    if any(r not in Role.__members__.values() for r in roles) or len(set(roles)) != len(roles):
        raise InvalidRequest("invalid user roles")
    return UserStatus(status), tuple(sorted(Role(r) for r in roles))


def github_id_taken(github_user_id: int) -> str:
    """Why a first GitHub sign-in is refused: the ``gh_<id>`` user id it would get belongs to a
    local user with no GitHub link (docs/web.md, "The gh_ id space")."""
    return (
        f"user id gh_{github_user_id} is already used by a local user without a GitHub link; "
        "an administrator must delete that user before this GitHub account can sign in"
    )
