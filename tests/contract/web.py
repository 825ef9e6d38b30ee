"""Browser sessions and GitHub sign-in upserts (spec §5.2–5.3); worker mappings are covered
with the operations that write them (claim/mutation contracts)."""

from __future__ import annotations

from hq_domain.users import Role, UserStatus
from tests.contract.helpers import now_s


class WebStoreContract:
    async def test_session_lifecycle(self, store, clock):
        await store.put_user("u1", UserStatus.ACTIVE, [Role.ADMIN])
        t = now_s(clock)
        await store.create_session(b"a" * 32, "u1", t + 10)
        assert (await store.session_user(b"a" * 32)).id == "u1"
        assert await store.session_user(b"b" * 32) is None
        clock.advance(9)
        assert (await store.session_user(b"a" * 32)).id == "u1"
        clock.advance(1)  # expires_at == now: expired
        assert await store.session_user(b"a" * 32) is None
        await store.create_session(b"c" * 32, "u1", now_s(clock) + 10)
        await store.delete_session(b"c" * 32)
        assert await store.session_user(b"c" * 32) is None
        await store.delete_session(b"never" * 4)  # deleting nothing is fine

    async def test_session_requires_active_user(self, store, clock):
        await store.put_user("u1", UserStatus.ACTIVE, [])
        await store.create_session(b"a" * 32, "u1", now_s(clock) + 10)
        assert (await store.session_user(b"a" * 32)).id == "u1"  # roles are the app's concern
        await store.put_user("u1", UserStatus.SUSPENDED, [Role.ADMIN])
        assert await store.session_user(b"a" * 32) is None
        await store.put_user("u1", UserStatus.ACTIVE, [Role.ADMIN])
        assert (await store.session_user(b"a" * 32)).id == "u1"

    async def test_new_session_deletes_expired_rows(self, store, clock):
        await store.put_user("u1", UserStatus.ACTIVE, [Role.ADMIN])
        start = clock.now_ns()
        await store.create_session(b"old" + b"\0" * 29, "u1", now_s(clock) + 10)
        await store.create_session(b"live" + b"\0" * 28, "u1", now_s(clock) + 1000)
        clock.advance(20)
        await store.create_session(b"new" + b"\0" * 29, "u1", now_s(clock) + 10)
        clock.set_ns(start)  # travel back: a deleted row cannot come back to life
        assert await store.session_user(b"old" + b"\0" * 29) is None
        assert (await store.session_user(b"live" + b"\0" * 28)).id == "u1"

    async def test_github_admin_upsert(self, store, clock):
        u = await store.upsert_github_admin(7, "octo", "https://a/7")
        assert (u.id, u.status, u.roles) == ("gh_7", UserStatus.ACTIVE, (Role.ADMIN,))
        assert (u.github_user_id, u.github_login, u.github_avatar_url) == (7, "octo", "https://a/7")
        assert u.last_login_at == u.created_at == now_s(clock)
        await store.put_user("gh_7", UserStatus.SUSPENDED, [Role.WORKER])
        clock.advance(30)
        u = await store.upsert_github_admin(7, "octo2", "https://a/7b")
        # Sign-in adds admin and keeps the worker role granted since (docs/web.md).
        assert (u.status, u.roles, u.github_login, u.github_avatar_url) == (
            UserStatus.ACTIVE, (Role.ADMIN, Role.WORKER), "octo2", "https://a/7b",
        )
        await store.put_user("gh_7", UserStatus.ACTIVE, [])
        u = await store.upsert_github_admin(7, "octo2", "https://a/7b")
        assert u.roles == (Role.ADMIN,)
        assert u.last_login_at == now_s(clock) and u.created_at == now_s(clock) - 30
        assert await store.get_user("gh_7") == u
        await store.delete_user("gh_7")
        again = await store.upsert_github_admin(7, "octo", "")
        assert again.id == "gh_7" and again.status is UserStatus.ACTIVE

    async def test_github_worker_upsert(self, store, clock):
        u = await store.upsert_github_worker(9, "w", "https://a/9")
        assert (u.id, u.status, u.roles) == ("gh_9", UserStatus.PENDING, (Role.WORKER,))
        assert u.github_user_id == 9 and u.last_login_at == now_s(clock)
        await store.put_user("gh_9", UserStatus.SUSPENDED, [])
        clock.advance(5)
        u = await store.upsert_github_worker(9, "w2", "https://a/9b")
        assert (u.status, u.roles) == (UserStatus.SUSPENDED, ())  # kept
        assert (u.github_login, u.github_avatar_url, u.last_login_at) == ("w2", "https://a/9b", now_s(clock))

    async def test_github_worker_upsert_keeps_admin(self, store, clock):
        await store.upsert_github_admin(11, "boss", "")
        u = await store.upsert_github_worker(11, "boss", "")
        assert (u.status, u.roles) == (UserStatus.ACTIVE, (Role.ADMIN,))
