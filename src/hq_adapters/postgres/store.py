"""The asyncpg implementation of :class:`hq_domain.ports.Store`."""

from __future__ import annotations

from typing import Any

import asyncpg

from hq_adapters.postgres.admin import AdminMixin
from hq_adapters.postgres.enqueue import EnqueueMixin
from hq_adapters.postgres.observe import ObserveMixin
from hq_adapters.postgres.users import UsersMixin
from hq_adapters.postgres.web import WebMixin
from hq_adapters.postgres.worker import WorkerMixin
from hq_domain.clock import Clock


class PostgresStore(WorkerMixin, AdminMixin, EnqueueMixin, UsersMixin, WebMixin, ObserveMixin):
    """Every port over one asyncpg pool; time comes only from the injected clock."""


async def keep_session(conn: asyncpg.Connection) -> None:
    """Pool release without asyncpg's ``RESET ALL; CLOSE ALL; UNLISTEN *; …`` round trip.

    The store leaves no session state behind (no SET, LISTEN, cursors or session advisory
    locks), and asyncpg itself still rolls back a connection released inside a transaction.
    """


async def connect(dsn: str, clock: Clock, **pool_kwargs: Any) -> PostgresStore:
    """A store over a new pool (``close()`` closes it). Migrations are run separately."""
    store_kwargs = {
        k: pool_kwargs.pop(k) for k in ("claim_sweep_limit",) if k in pool_kwargs
    }
    pool_kwargs.setdefault("reset", keep_session)
    # Plan every execution with its actual batch: a generic plan estimates unnest($n) at a
    # handful of rows and turns the batch UPDATEs into items × items nested loops at large B.
    pool_kwargs.setdefault("server_settings", {"plan_cache_mode": "force_custom_plan"})
    pool = await asyncpg.create_pool(dsn, **pool_kwargs)
    return PostgresStore(pool, clock, **store_kwargs)
