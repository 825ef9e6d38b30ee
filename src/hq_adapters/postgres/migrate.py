"""Numbered migrations, applied in one transaction under the reference's advisory lock.

The lock is ``pg_advisory_xact_lock``: transaction-scoped, released by COMMIT/ROLLBACK, so
migrating through a transaction-mode pooler (PgBouncer) holds nothing across transactions, and
replicas starting together still apply each migration once. :func:`migrate_dsn` uses unnamed
statements and no startup parameter, so ``tracker migrate`` works direct or through a pooler.

Our versions are recorded in the reference's own ``tracker_schema_migrations(version bigint,
applied_at bigint)`` as ``VERSION_BASE + n`` so they never collide with the versions the
reference implementation recorded there (D7: a reference-created database keeps its history
and is upgraded in place). Every migration is written with guarded DDL, so running one over a
reference schema is safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

ADVISORY_LOCK = 7532194861021
VERSION_BASE = 1000
_FILE_RE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS tracker_schema_migrations (
    version bigint PRIMARY KEY,
    applied_at bigint NOT NULL
)
"""
_APPLIED = "SELECT version FROM tracker_schema_migrations WHERE version >= $1"
_RECORD = "INSERT INTO tracker_schema_migrations (version, applied_at) VALUES ($1, $2)"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """Every migration shipped with the package, in version order."""
    out = []
    for entry in resources.files("hq_adapters.postgres.migrations").iterdir():
        m = _FILE_RE.match(entry.name)
        if m:
            out.append(Migration(VERSION_BASE + int(m.group(1)), entry.name, entry.read_text()))
    return sorted(out, key=lambda m: m.version)


async def migrate(conn: asyncpg.Connection, now_s: int) -> list[str]:
    """Apply pending migrations; returns the names applied (empty when already current)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ADVISORY_LOCK)
        await conn.execute(_CREATE_TABLE)
        done = {r["version"] for r in await conn.fetch(_APPLIED, VERSION_BASE)}
        applied = []
        for mig in migrations():
            if mig.version in done:
                continue
            await conn.execute(mig.sql)
            await conn.execute(_RECORD, mig.version, now_s)
            applied.append(mig.name)
        return applied


async def migrate_dsn(dsn: str, now_s: int) -> list[str]:
    from hq_adapters.postgres.store import one_shot_options

    conn = await asyncpg.connect(dsn, **one_shot_options())
    try:
        return await migrate(conn, now_s)
    finally:
        await conn.close()
