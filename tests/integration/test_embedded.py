"""D5: the embedded PostgreSQL starts in a directory, serves asyncpg over its socket, keeps
its data across restarts, and stops."""

from __future__ import annotations

import asyncpg
import pytest

from hq_adapters.embedded import EmbeddedPostgres
from hq_adapters.postgres import migrate

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # two initdb runs: seconds


async def test_start_create_migrate_restart(tmp_path) -> None:
    data = tmp_path / "data" / "postgres"
    pg = EmbeddedPostgres(data).start()
    try:
        dsn = await pg.ensure_database("hq")
        assert dsn == pg.dsn("hq") and "host=" in dsn
        assert await pg.ensure_database("hq") == dsn  # idempotent
        conn = await asyncpg.connect(dsn)
        try:
            assert await migrate(conn, 1)
            await conn.execute(
                "INSERT INTO tracker_users (id, status, created_at, updated_at)"
                " VALUES ('kept', 'active', 1, 1)"
            )
        finally:
            await conn.close()
    finally:
        pg.stop()
    with pytest.raises(RuntimeError):
        pg.dsn()

    again = EmbeddedPostgres(data).start()
    try:
        conn = await asyncpg.connect(again.dsn("hq"))
        try:
            assert await conn.fetchval("SELECT id FROM tracker_users") == "kept"
            assert await migrate(conn, 2) == []
        finally:
            await conn.close()
    finally:
        again.stop()
