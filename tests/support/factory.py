"""How contract tests and the state machine obtain a fresh, empty store on any adapter.

The memory factory lives in ``tests/support/memory_factory.py``; the PostgreSQL factory in
``tests/support/postgres_factory.py``. A factory is used from inside one event loop: create
stores and close them on the loop that uses them (asyncpg pools are bound to their loop).
"""

from __future__ import annotations

from typing import Protocol

from hq_domain.clock import Clock
from hq_domain.ports import Store


class StoreFactory(Protocol):
    name: str

    async def create(self, clock: Clock) -> Store:
        """A store over empty state (no users, projects or jobs) that reads ``clock``."""
        ...

    async def dispose(self, store: Store) -> None:
        """Release what ``create`` acquired (pool, connections)."""
        ...
