"""The FIFO gate in front of the connection pool (hq_adapters.postgres.fair_gate)."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hq_adapters.postgres.fair_gate import FairGate


async def test_a_newcomer_never_overtakes_a_waiter() -> None:
    gate = FairGate(1)
    order: list[str] = []
    await gate.acquire()  # held

    async def take(name: str) -> None:
        await gate.acquire()
        order.append(name)

    waiter = asyncio.create_task(take("waiter"))
    await asyncio.sleep(0)  # the waiter queues
    newcomer = asyncio.create_task(take("newcomer"))  # runs before the waiter wakes
    gate.release()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert order == ["waiter"]
    assert not newcomer.done()
    gate.release()
    await newcomer
    assert order == ["waiter", "newcomer"]
    await waiter


async def test_asyncio_queue_lets_a_newcomer_overtake() -> None:
    """What the gate is for: asyncpg's idle-connection queue behaves like this."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    order: list[str] = []

    async def take(name: str) -> None:
        await queue.get()
        order.append(name)

    waiter = asyncio.create_task(take("waiter"))
    await asyncio.sleep(0)
    newcomer = asyncio.create_task(take("newcomer"))  # runs before the waiter wakes
    queue.put_nowait("conn")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert order == ["newcomer"]  # and the waiter is back at the end of the line
    await newcomer
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter


async def test_a_cancelled_waiter_passes_its_place_on() -> None:
    gate = FairGate(1)
    await gate.acquire()
    first = asyncio.create_task(gate.acquire())
    second = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    gate.release()  # handed to `first` ...
    first.cancel()  # ... which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)  # the place went on to `second`
    assert gate.waiting == 0


async def test_a_cancelled_waiter_leaves_the_line() -> None:
    gate = FairGate(1)
    await gate.acquire()
    gone = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert gate.waiting == 0
    gate.release()
    await asyncio.wait_for(gate.acquire(), 1)  # the place came back free


def test_a_gate_needs_a_place() -> None:
    with pytest.raises(ValueError):
        FairGate(0)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 4), tasks=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_never_more_than_size_holders_and_one_place_goes_in_order(
    size: int, tasks: int, seed: int
) -> None:
    rng = random.Random(seed)

    async def scenario() -> None:
        gate = FairGate(size)
        holders = 0
        admitted: list[int] = []
        asked: list[int] = []

        async def one(i: int) -> None:
            nonlocal holders
            await asyncio.sleep(0) if rng.random() < 0.5 else None
            asked.append(i)
            await gate.acquire()
            admitted.append(i)
            holders += 1
            assert holders <= size
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            holders -= 1
            gate.release()

        await asyncio.gather(*(one(i) for i in range(tasks)))
        assert sorted(admitted) == sorted(asked)  # everyone got in
        if size == 1:  # with more places, a task handed one may resume after a newcomer
            assert admitted == asked  # nobody overtakes
        assert gate.waiting == 0

    asyncio.run(scenario())
