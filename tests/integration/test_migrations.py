"""The migration chain: produces schema.sql, is idempotent, and keeps the reference's names."""

from __future__ import annotations

from importlib import resources

import asyncpg
import pytest

from hq_adapters.postgres.migrate import ADVISORY_LOCK, VERSION_BASE, migrate, migrations

pytestmark = pytest.mark.postgres

_COLUMNS = """
SELECT table_name, column_name, data_type, udt_name, is_nullable,
       coalesce(column_default, ''), is_identity, coalesce(identity_generation, '')
FROM information_schema.columns WHERE table_schema = 'public'
ORDER BY table_name, column_name
"""
_INDEXES = """
SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'
ORDER BY tablename, indexname
"""
_CONSTRAINTS = """
SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
WHERE n.nspname = 'public'
ORDER BY 1, 2
"""


_RULES = """
SELECT p.proname, pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'public' AND p.proname LIKE 'tracker\\_rule\\_%'
ORDER BY 1
"""


async def describe(conn: asyncpg.Connection) -> dict[str, list[tuple]]:
    """Columns, indexes, constraints and rule functions (migration 0008) of the public
    schema, in a stable order."""
    return {
        "columns": [tuple(r) for r in await conn.fetch(_COLUMNS)],
        "indexes": [tuple(r) for r in await conn.fetch(_INDEXES)],
        "constraints": [tuple(r) for r in await conn.fetch(_CONSTRAINTS)],
        "rules": [tuple(r) for r in await conn.fetch(_RULES)],
    }


def test_versions_are_numbered_from_the_base() -> None:
    found = migrations()
    assert found, "no migrations shipped"
    versions = [m.version for m in found]
    # Numbered 1, 2, 3, … from the base with no gap or repeat.
    assert versions == [VERSION_BASE + n for n in range(1, len(versions) + 1)]
    assert ADVISORY_LOCK == 7532194861021


async def test_chain_produces_the_canonical_schema(pg_databases) -> None:
    migrated_dsn = await pg_databases.create("mig")
    canonical_dsn = await pg_databases.create("canon")
    try:
        # pg_databases' template is already migrated: start the chain from an empty schema.
        m = await asyncpg.connect(migrated_dsn)
        c = await asyncpg.connect(canonical_dsn)
        try:
            for conn in (m, c):
                await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
            applied = await migrate(m, 1)
            assert applied == [mig.name for mig in migrations()]
            schema = resources.files("hq_adapters.postgres").joinpath("schema.sql").read_text()
            await c.execute(schema)
            got, want = await describe(m), await describe(c)
            assert len(want["rules"]) == 7
            for key in want:
                assert got[key] == want[key], key
        finally:
            await m.close()
            await c.close()
    finally:
        await pg_databases.drop(migrated_dsn)
        await pg_databases.drop(canonical_dsn)


async def test_migrate_is_idempotent(pg_dsn) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        before = await describe(conn)
        versions = await conn.fetch("SELECT version FROM tracker_schema_migrations")
        assert await migrate(conn, 2) == []
        assert await describe(conn) == before
        after = await conn.fetch("SELECT version FROM tracker_schema_migrations")
        assert sorted(versions) == sorted(after)
    finally:
        await conn.close()


async def test_rerunning_every_migration_body_is_harmless(pg_dsn) -> None:
    """Guarded DDL: each file re-applied over the finished schema changes nothing."""
    conn = await asyncpg.connect(pg_dsn)
    try:
        before = await describe(conn)
        async with conn.transaction():
            for mig in migrations():
                await conn.execute(mig.sql)
        assert await describe(conn) == before
    finally:
        await conn.close()


async def test_concurrent_migrations_serialise(pg_databases) -> None:
    import asyncio

    dsn = await pg_databases.create("conc")
    try:
        setup = await asyncpg.connect(dsn)
        await setup.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        await setup.close()
        conns = [await asyncpg.connect(dsn) for _ in range(3)]
        try:
            results = await asyncio.gather(*(migrate(c, 1) for c in conns))
        finally:
            for c in conns:
                await c.close()
        assert sorted(len(r) for r in results) == [0, 0, len(migrations())]
    finally:
        await pg_databases.drop(dsn)
