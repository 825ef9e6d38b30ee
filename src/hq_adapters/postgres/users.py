"""AuthPort and UsersPort over PostgreSQL: token owners, users and machine tokens
(spec §1.7.9, §2.11)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from hq_adapters.postgres import rows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_domain.errors import NotFound
from hq_domain.ids import MAX_MACHINE_TOKEN_CHARS, machine_token_digest
from hq_domain.users import Principal, Role, User, UserListItem, UserStatus


def _role_values(roles: Sequence[Role]) -> list[str]:
    return sorted({Role(r).value for r in roles})


class PostgresAuth:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def principal_for_token(self, token: str) -> Principal | None:
        if not token or len(token) > MAX_MACHINE_TOKEN_CHARS:
            return None
        r = await self._db.fetchrow("principal_for_token", machine_token_digest(token))
        if r is None:
            return None
        return Principal(r["id"], UserStatus(r["status"]), frozenset(rows.roles(r["roles"])))


class PostgresUsers:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def list_users(self) -> list[UserListItem]:
        return [
            UserListItem(rows.user(r), r["machine_token_active"], r["machine_token_viewable"])
            for r in await self._db.fetch("list_users")
        ]

    async def get_user(self, user_id: str) -> User | None:
        r = await self._db.fetchrow("get_user", user_id)
        return None if r is None else rows.user(r)

    async def put_user(self, user_id: str, status: UserStatus, roles: Sequence[Role]) -> None:
        await self._db.execute(
            "put_user", user_id, UserStatus(status).value, _role_values(roles), self._db.now_s()
        )

    async def delete_user(self, user_id: str) -> None:
        if await self._db.fetchval("delete_user", user_id) is None:
            raise NotFound("user not found")

    async def get_machine_token(self, user_id: str) -> str | None:
        return await self._db.fetchval("get_machine_token", user_id)

    async def set_machine_token(self, user_id: str, token: str) -> None:
        async with self._db.transaction() as conn:
            await self._install_token(conn, user_id, token, self._db.now_s())

    @staticmethod
    async def _install_token(conn: asyncpg.Connection, user_id: str, token: str, now: int) -> None:
        digest = machine_token_digest(token)
        await conn.execute(q("release_token_hash"), user_id, digest)
        if await conn.fetchval(q("set_machine_token"), user_id, digest, token, now) is None:
            raise NotFound("user not found")

    async def revoke_machine_token(self, user_id: str) -> None:
        if await self._db.fetchval("revoke_machine_token", user_id, self._db.now_s()) is None:
            raise NotFound("active machine token not found")

    async def bootstrap_user(self, user_id: str, roles: Sequence[Role], token: str) -> None:
        now = self._db.now_s()
        async with self._db.transaction() as conn:
            await conn.execute(q("bootstrap_user"), user_id, _role_values(roles), now)
            await self._install_token(conn, user_id, token, now)
