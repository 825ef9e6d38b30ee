"""PostgreSQL adapter: asyncpg store, SQL blocks and migrations."""

from hq_adapters.postgres.migrate import migrate, migrate_dsn
from hq_adapters.postgres.store import PostgresStore, connect

__all__ = ["PostgresStore", "connect", "migrate", "migrate_dsn"]
