"""Unit-test fixtures: a ManualClock and an in-memory store reading it.

Test modules (or the contract subclasses) may override either fixture by name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hq_adapters.memory import MemoryStore
from hq_domain.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def store(clock: ManualClock) -> AsyncIterator[MemoryStore]:
    store = MemoryStore(clock)
    yield store
    await store.close()
