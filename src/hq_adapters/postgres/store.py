"""The asyncpg implementation of :class:`hq_domain.ports.Store`, and how its pool connects.

:class:`PostgresStore` is a composition: one class per port (``worker.py``, ``admin.py``,
``enqueue.py``, ``users.py``, ``web.py``, ``observe.py``) over one shared
:class:`~hq_adapters.postgres.database.Database` (pool and clock), each taking its own options
explicitly. The store exposes them as attributes and binds each port method from its class.

Two connection modes (``pooler``):

* ``"none"`` (direct to PostgreSQL, the default): ``plan_cache_mode = force_custom_plan`` is
  sent as a startup parameter and asyncpg caches named prepared statements per connection
  (parse once, plan every execution with the actual batch).
* ``"transaction"`` (behind PgBouncer or another transaction-mode pooler): a server connection
  belongs to us only for one transaction, so nothing may live in the session. No startup
  parameter beyond what PgBouncer accepts, and ``statement_cache_size=0``: asyncpg then sends
  every statement as the *unnamed* prepared statement (Parse/Describe/Flush, Bind/Execute/Sync
  on the same server connection). PostgreSQL builds a new plan source for every Parse and plans
  the first executions of a plan source with the actual parameters, so each execution gets a
  custom plan — the protection ``force_custom_plan`` buys in direct mode, kept without any
  session setting (``tests/integration/test_pooler_modes.py`` checks both modes' plans).

A direct-mode pool that finds itself behind a pooler fails at start-up with a
:class:`PoolerMismatch` naming the fix, instead of serving 500s: PgBouncer refuses the startup
parameter, and if it was told to ignore it, every new connection checks that the setting
arrived.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any

import asyncpg

from hq_adapters.postgres.admin import PostgresProjects
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.enqueue import PostgresEnqueue
from hq_adapters.postgres.maintenance import PostgresMaintenance
from hq_adapters.postgres.monitor import PostgresMonitor
from hq_adapters.postgres.observe import PostgresObserve
from hq_adapters.postgres.users import PostgresAuth, PostgresUsers
from hq_adapters.postgres.web import PostgresWeb
from hq_adapters.postgres.worker import PostgresWorker
from hq_domain.clock import Clock
from hq_domain.ports import (
    AuthPort,
    EnqueuePort,
    MaintenancePort,
    MonitorPort,
    ObservePort,
    ProjectsPort,
    UsersPort,
    WebPort,
    WorkerPort,
)
from hq_domain.worker import CLAIM_SWEEP_LIMIT

PLAN_CACHE_MODE = "force_custom_plan"
POOLER_ENV = "HQ_DATABASE_POOLER"


class Pooler(enum.StrEnum):
    NONE = "none"
    TRANSACTION = "transaction"


def parse_pooler(text: str | None) -> Pooler:
    """``""``/``none``/``direct`` → direct; ``transaction`` → transaction-mode pooler."""
    value = (text or "none").strip().lower()
    if value in ("", "none", "direct"):
        return Pooler.NONE
    if value == "transaction":
        return Pooler.TRANSACTION
    raise ValueError(f'unknown database pooler "{text}" (want "none" or "transaction")')


class PoolerMismatch(RuntimeError):
    """A direct-mode pool is talking to a connection pooler."""


_HINT = (
    f"set {POOLER_ENV}=transaction (or --pooler transaction) when HQ_DATABASE_URL points at "
    "PgBouncer or another connection pooler"
)


def port_methods(port: type) -> list[str]:
    """The public methods a port protocol declares, its own and inherited."""
    return [
        name
        for klass in reversed(port.__mro__)
        for name, value in vars(klass).items()
        if inspect.isfunction(value) and not name.startswith("_")
    ]


class PostgresStore:
    """Every port over one asyncpg pool; time comes only from the injected clock.

    The per-port objects are public attributes (``store.worker.claim_orders``, a worker with
    other options over ``store.database``); each port method of the store *is* the bound
    method of its object, set at construction, so calling ``store.claim`` costs what calling
    ``store.worker.claim`` does.
    """

    def __init__(
        self, pool: asyncpg.Pool, clock: Clock, *, claim_sweep_limit: int = CLAIM_SWEEP_LIMIT,
        worker_lanes: int | None = None,
    ) -> None:
        self.database = db = Database(pool, clock, worker_lanes=worker_lanes)
        self.auth = PostgresAuth(db)
        self.worker = PostgresWorker(db, claim_sweep_limit=claim_sweep_limit)
        self.maintenance = PostgresMaintenance(db)
        self.monitor = PostgresMonitor(db)
        self.projects = PostgresProjects(db)
        self.enqueuing = PostgresEnqueue(db)
        self.users = PostgresUsers(db)
        self.observe = PostgresObserve(db)
        self.web = PostgresWeb(db)
        for part, port in (
            (self.auth, AuthPort),
            (self.worker, WorkerPort),
            (self.maintenance, MaintenancePort),
            (self.monitor, MonitorPort),
            (self.projects, ProjectsPort),
            (self.enqueuing, EnqueuePort),
            (self.users, UsersPort),
            (self.observe, ObservePort),
            (self.web, WebPort),
        ):
            for name in port_methods(port):
                setattr(self, name, getattr(part, name))

    async def close(self) -> None:
        await self.database.close()

    def pool_stats(self) -> tuple[int, int]:
        """(open connections, idle connections) of the pool, for the metrics gauge."""
        return self.database.pool_stats()

    def count_connections_with(self, count: Callable[[], int]) -> None:
        """:meth:`Database.count_connections_with`: the serving process's client connections."""
        self.database.count_connections_with(count)


async def keep_session(conn: asyncpg.Connection) -> None:
    """Pool release without asyncpg's ``RESET ALL; CLOSE ALL; UNLISTEN *; …`` round trip.

    The store leaves no session state behind (no SET, LISTEN, cursors or session advisory
    locks), and asyncpg itself still rolls back a connection released inside a transaction.
    """


async def check_direct(conn: asyncpg.Connection) -> None:
    """Pool ``init`` in direct mode: the startup parameter must have arrived. A pooler told to
    ignore it (PgBouncer's ``ignore_startup_parameters``) would otherwise let every request
    fail later on prepared statements that live on another server connection."""
    mode = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
    if mode != PLAN_CACHE_MODE:
        raise PoolerMismatch(
            f"the database session has plan_cache_mode={mode}, not the {PLAN_CACHE_MODE} this "
            f"pool asked for at connect time: a connection pooler dropped it; {_HINT}"
        )


def pool_options(pooler: Pooler, overrides: dict[str, Any]) -> dict[str, Any]:
    """asyncpg ``create_pool`` options for a connection mode (``overrides`` win)."""
    if pooler is Pooler.TRANSACTION:
        return {"statement_cache_size": 0, **overrides}
    # Plan every execution with its actual batch: a generic plan estimates unnest($n) at a
    # handful of rows and turns the batch UPDATEs into items × items nested loops at large B.
    options: dict[str, Any] = {"server_settings": {"plan_cache_mode": PLAN_CACHE_MODE}}
    if "server_settings" not in overrides:
        options["init"] = check_direct
    return {**options, **overrides}


def one_shot_options() -> dict[str, Any]:
    """Options for a single-connection command (migrate): no startup parameter
    and unnamed statements only, so it runs the same direct or through a transaction pooler
    (its statements are few; re-parsing them costs nothing measurable)."""
    return {"statement_cache_size": 0}


async def connect(
    dsn: str,
    clock: Clock,
    *,
    pooler: Pooler | str = Pooler.NONE,
    claim_sweep_limit: int = CLAIM_SWEEP_LIMIT,
    worker_lanes: int | None = None,
    **pool_kwargs: Any,
) -> PostgresStore:
    """A store over a new pool (``close()`` closes it). Migrations are run separately.

    ``pooler``, ``claim_sweep_limit`` and ``worker_lanes`` configure the store; every other
    keyword argument goes to :func:`asyncpg.create_pool`."""
    mode = parse_pooler(pooler) if isinstance(pooler, str) else pooler
    pool_kwargs.setdefault("reset", keep_session)
    try:
        pool = await asyncpg.create_pool(dsn, **pool_options(mode, pool_kwargs))
    except asyncpg.ProtocolViolationError as exc:
        if "startup parameter" in str(exc):
            raise PoolerMismatch(f"{exc}: {_HINT}") from exc
        raise
    return PostgresStore(
        pool, clock, claim_sweep_limit=claim_sweep_limit, worker_lanes=worker_lanes
    )
