"""Driver errors become domain errors by constraint name, at the adapter edge."""

from __future__ import annotations

import asyncpg
import pytest

from hq_adapters.postgres.errors import translate, translated
from hq_domain.errors import NotFound

pytestmark = pytest.mark.postgres


async def test_constraint_violations_are_translated(pg_dsn) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        with pytest.raises(NotFound) as exc, translated():
            await conn.execute(
                "INSERT INTO tracker_web_sessions VALUES ($1, 'ghost', 1, 2)", b"x"
            )
        assert exc.value.message == "user not found"
        with pytest.raises(NotFound) as exc, translated():
            await conn.execute(
                "INSERT INTO tracker_jobs (project_id, value, random_key, status,"
                " created_at, updated_at) VALUES ('gone', 'v', 0, 'todo', 1, 1)"
            )
        assert exc.value.message == "project not found"
    finally:
        await conn.close()


async def test_unknown_violations_propagate(pg_dsn) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        with pytest.raises(asyncpg.CheckViolationError) as exc, translated():
            await conn.execute(
                "INSERT INTO tracker_users VALUES ('u', 'nonsense', '{}', NULL, NULL, NULL,"
                " NULL, 1, 1)"
            )
        assert translate(exc.value) is None
    finally:
        await conn.close()
