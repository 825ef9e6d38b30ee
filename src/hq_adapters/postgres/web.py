"""WebPort over PostgreSQL: browser sessions, GitHub sign-in upserts and the worker→user mapping (spec §5)."""

from __future__ import annotations

from hq_adapters.postgres import rows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_domain.errors import PermissionDenied
from hq_domain.ports import WorkerMapping
from hq_domain.users import User, first_github_login, github_id_taken, github_user_key


class PostgresWeb:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create_session(self, digest: bytes, user_id: str, expires_at: int) -> None:
        now = self._db.now_s()
        async with self._db.transaction() as conn:
            await conn.execute(q("delete_expired_sessions"), now)
            await conn.execute(q("create_session"), digest, user_id, now, expires_at)

    async def session_user(self, digest: bytes) -> User | None:
        r = await self._db.fetchrow("session_user", digest, self._db.now_s())
        return None if r is None else rows.user(r)

    async def delete_session(self, digest: bytes) -> None:
        await self._db.execute("delete_session", digest)

    async def _github_upsert(
        self, team_member: bool, github_user_id: int, login: str, avatar_url: str
    ) -> User:
        update = q("github_admin_update" if team_member else "github_worker_update")
        status, roles = first_github_login(team_member)
        args = (github_user_id, login, avatar_url, self._db.now_s())
        async with self._db.transaction() as conn:
            r = await conn.fetchrow(update, *args)
            if r is None:
                r = await conn.fetchrow(
                    q("github_insert"), *args, github_user_key(github_user_id), status.value,
                    [r.value for r in roles],
                )
            if r is None:  # the id exists: a concurrent first sign-in, or an unlinked local user
                r = await conn.fetchrow(update, *args)
            if r is None:
                raise PermissionDenied(github_id_taken(github_user_id))
        return rows.user(r)

    async def upsert_github_admin(self, github_user_id: int, login: str, avatar_url: str) -> User:
        return await self._github_upsert(True, github_user_id, login, avatar_url)

    async def upsert_github_worker(self, github_user_id: int, login: str, avatar_url: str) -> User:
        return await self._github_upsert(False, github_user_id, login, avatar_url)

    async def list_worker_mappings(self, worker_id: str | None, limit: int) -> list[WorkerMapping]:
        if worker_id is not None:
            found = await self._db.fetch("worker_mapping", worker_id)
        else:
            found = await self._db.fetch("worker_mappings", limit)
        return [WorkerMapping(r["worker_id"], r["user_id"]) for r in found]
