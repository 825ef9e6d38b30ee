"""Users, machine tokens and token lookup (spec §1.5, §1.7.9, §2.11)."""

from __future__ import annotations

import pytest

from hq_domain.errors import NotFound
from hq_domain.users import Role, UserStatus
from tests.contract.helpers import claim, now_s, put


class UsersContract:
    async def test_put_and_get_user(self, store, clock):
        assert await store.get_user("u1") is None
        await store.put_user("u1", UserStatus.PENDING, [Role.WORKER, Role.ADMIN])
        u = await store.get_user("u1")
        assert (u.id, u.status, u.roles) == ("u1", UserStatus.PENDING, (Role.ADMIN, Role.WORKER))
        assert (u.github_user_id, u.github_login, u.github_avatar_url, u.last_login_at) == (None,) * 4
        assert u.created_at == u.updated_at == now_s(clock)
        clock.advance(5)
        await store.put_user("u1", UserStatus.ACTIVE, [])
        u2 = await store.get_user("u1")
        assert (u2.status, u2.roles, u2.created_at, u2.updated_at) == (
            UserStatus.ACTIVE, (), u.created_at, now_s(clock),
        )

    async def test_put_user_keeps_github_fields(self, store, clock):
        gh = await store.upsert_github_worker(42, "octo", "https://avatar/42")
        await store.put_user(gh.id, UserStatus.ACTIVE, [Role.WORKER])
        u = await store.get_user(gh.id)
        assert (u.github_user_id, u.github_login, u.github_avatar_url) == (42, "octo", "https://avatar/42")
        assert u.status is UserStatus.ACTIVE

    async def test_list_users(self, store, clock):
        for uid in ("zed", "amy", "bob"):
            await store.put_user(uid, UserStatus.ACTIVE, [Role.WORKER])
        await store.set_machine_token("bob", "tok-bob")
        await store.set_machine_token("zed", "tok-zed")
        await store.revoke_machine_token("zed")
        items = await store.list_users()
        assert [i.user.id for i in items] == ["amy", "bob", "zed"]
        assert [(i.machine_token_active, i.machine_token_viewable) for i in items] == [
            (False, False), (True, True), (False, False),
        ]

    async def test_tokens(self, store, clock):
        with pytest.raises(NotFound, match=r"^user not found$"):
            await store.set_machine_token("u1", "tok-1")
        with pytest.raises(NotFound, match=r"^active machine token not found$"):
            await store.revoke_machine_token("u1")
        await store.put_user("u1", UserStatus.SUSPENDED, [])
        assert await store.get_machine_token("u1") is None
        with pytest.raises(NotFound, match=r"^active machine token not found$"):
            await store.revoke_machine_token("u1")
        await store.set_machine_token("u1", "tok-1")
        assert await store.get_machine_token("u1") == "tok-1"
        p = await store.principal_for_token("tok-1")
        assert (p.user_id, p.status, p.roles) == ("u1", UserStatus.SUSPENDED, frozenset())
        await store.set_machine_token("u1", "tok-2")  # rotation invalidates the old token
        assert await store.principal_for_token("tok-1") is None
        assert (await store.principal_for_token("tok-2")).user_id == "u1"
        await store.revoke_machine_token("u1")
        assert await store.get_machine_token("u1") is None
        assert await store.principal_for_token("tok-2") is None
        with pytest.raises(NotFound, match=r"^active machine token not found$"):
            await store.revoke_machine_token("u1")
        await store.set_machine_token("u1", "tok-2")  # un-revokes
        assert (await store.principal_for_token("tok-2")).user_id == "u1"
        assert await store.principal_for_token("unknown") is None
        assert await store.principal_for_token("") is None

    async def test_principal_reports_status_and_roles(self, store, clock):
        await store.put_user("u1", UserStatus.PENDING, [Role.ADMIN, Role.WORKER])
        await store.set_machine_token("u1", "tok")
        p = await store.principal_for_token("tok")
        assert p.status is UserStatus.PENDING and p.roles == frozenset({Role.ADMIN, Role.WORKER})
        assert not p.is_active_admin and not p.is_active_worker
        await store.put_user("u1", UserStatus.ACTIVE, [Role.ADMIN])
        p = await store.principal_for_token("tok")
        assert p.is_active_admin and not p.is_active_worker

    async def test_bootstrap_user(self, store, clock):
        await store.bootstrap_user("boot", [Role.ADMIN, Role.WORKER], "tok-b")
        u = await store.get_user("boot")
        assert u.status is UserStatus.ACTIVE and u.roles == (Role.ADMIN, Role.WORKER)
        assert (await store.principal_for_token("tok-b")).is_active_admin
        await store.put_user("boot", UserStatus.SUSPENDED, [Role.ADMIN])
        await store.revoke_machine_token("boot")
        await store.bootstrap_user("boot", [Role.WORKER], "tok-c")
        u = await store.get_user("boot")
        assert u.status is UserStatus.ACTIVE and u.roles == (Role.WORKER,)
        assert await store.get_machine_token("boot") == "tok-c"
        assert await store.principal_for_token("tok-b") is None

    async def test_delete_user_cascades(self, store, clock):
        with pytest.raises(NotFound, match=r"^user not found$"):
            await store.delete_user("u1")
        await store.put_user("u1", UserStatus.ACTIVE, [Role.WORKER, Role.ADMIN])
        await store.put_user("u2", UserStatus.ACTIVE, [Role.WORKER])
        await store.set_machine_token("u1", "tok-1")
        await store.create_session(b"s" * 32, "u1", now_s(clock) + 100)
        await put(store)
        await claim(store, user="u1", worker="wa")
        await claim(store, user="u2", worker="wb")
        await store.delete_user("u1")
        assert await store.get_user("u1") is None
        assert await store.principal_for_token("tok-1") is None
        assert await store.session_user(b"s" * 32) is None
        assert [m.worker_id for m in await store.list_worker_mappings(None, 10)] == ["wb"]
        assert [i.user.id for i in await store.list_users()] == ["u2"]
        # re-creating the user does not resurrect anything
        await store.put_user("u1", UserStatus.ACTIVE, [Role.WORKER])
        assert await store.get_machine_token("u1") is None
        assert await store.session_user(b"s" * 32) is None
