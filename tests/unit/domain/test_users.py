"""User PUT validation and role gates (spec §1.5, §1.7.9)."""

from __future__ import annotations

import pytest

from hq_domain.errors import InvalidRequest, PermissionDenied
from hq_domain.users import (
    Principal,
    Role,
    UserStatus,
    require_admin,
    require_worker,
    validate_user_put,
)


def test_validate_user_put_sorts_roles() -> None:
    assert validate_user_put("u1", "active", ["worker", "admin"]) == (
        UserStatus.ACTIVE,
        (Role.ADMIN, Role.WORKER),
    )


@pytest.mark.parametrize("roles", [None, []])
def test_no_roles(roles: list[str] | None) -> None:
    assert validate_user_put("u1", "pending", roles) == (UserStatus.PENDING, ())


@pytest.mark.parametrize("status", ["pending", "active", "suspended"])
def test_statuses(status: str) -> None:
    assert validate_user_put("u", status, ["worker"])[0].value == status


@pytest.mark.parametrize(
    ("user_id", "status"),
    [("", "active"), ("a b", "active"), ("u", "ACTIVE"), ("u", ""), ("u", "deleted")],
)
def test_invalid_user(user_id: str, status: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        validate_user_put(user_id, status, ["worker"])
    assert exc.value.message == "invalid user" and exc.value.status == 400


@pytest.mark.parametrize("roles", [["root"], ["worker", "worker"], ["Admin"], [""], ["admin", "x"]])
def test_invalid_roles(roles: list[str]) -> None:
    with pytest.raises(InvalidRequest, match=r"^invalid user roles$"):
        validate_user_put("u1", "active", roles)


def test_user_checked_before_roles() -> None:
    with pytest.raises(InvalidRequest, match=r"^invalid user$"):
        validate_user_put("u1", "nope", ["root"])


def principal(status: UserStatus, *roles: Role) -> Principal:
    return Principal("u", status, frozenset(roles))


@pytest.mark.parametrize("status", list(UserStatus))
@pytest.mark.parametrize("roles", [(), (Role.ADMIN,), (Role.WORKER,), (Role.ADMIN, Role.WORKER)])
def test_role_gates(status: UserStatus, roles: tuple[Role, ...]) -> None:
    p = principal(status, *roles)
    active = status is UserStatus.ACTIVE
    assert p.is_active_admin is (active and Role.ADMIN in roles)
    assert p.is_active_worker is (active and Role.WORKER in roles)

    if p.is_active_admin:
        require_admin(p)
    else:
        with pytest.raises(PermissionDenied, match=r"^active admin role required$") as exc:
            require_admin(p)
        assert (exc.value.code, exc.value.status) == ("permission_denied", 403)

    if p.is_active_worker:
        require_worker(status, roles)
        require_worker(status, frozenset(roles))
    else:
        with pytest.raises(PermissionDenied, match=r"^active worker role required$"):
            require_worker(status, roles)


def test_admin_sign_in_adds_admin_and_keeps_other_roles() -> None:
    from hq_domain.users import Role, roles_after_admin_login

    assert roles_after_admin_login(()) == (Role.ADMIN,)
    assert roles_after_admin_login((Role.WORKER,)) == (Role.ADMIN, Role.WORKER)
    assert roles_after_admin_login((Role.ADMIN, Role.WORKER)) == (Role.ADMIN, Role.WORKER)


def test_first_github_login_and_its_user_id() -> None:
    from hq_domain.users import first_github_login, github_user_key

    assert first_github_login(True) == (UserStatus.ACTIVE, (Role.ADMIN,))
    assert first_github_login(False) == (UserStatus.PENDING, (Role.WORKER,))
    assert github_user_key(42) == "gh_42"
