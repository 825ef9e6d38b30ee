"""PostgreSQL adapter: asyncpg store, SQL blocks and migrations."""

from hq_adapters.postgres.migrate import migrate, migrate_dsn
from hq_adapters.postgres.store import (
    Pooler,
    PoolerMismatch,
    PostgresStore,
    connect,
    one_shot_options,
    parse_pooler,
)

__all__ = [
    "Pooler",
    "PoolerMismatch",
    "PostgresStore",
    "connect",
    "migrate",
    "migrate_dsn",
    "one_shot_options",
    "parse_pooler",
]
