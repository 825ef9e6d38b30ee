"""The parent-to-child connection handoff of ``tracker serve --processes N``
(:mod:`hq_apps.handoff`), without a database: the choice of child, the descriptor passing,
the adoption into a child's loop and the shared open-connection counts."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import socket
import threading
import time
from typing import Any

from hq_apps.handoff import (
    Dispatcher,
    OpenConnections,
    adopt_connections,
    channel_pair,
    count_closed,
    least_busy,
)


def test_least_busy_orders_the_available_children_by_open_connections() -> None:
    assert least_busy([3, 1, 2], [True, True, True]) == [1, 2, 0]
    assert least_busy([3, 1, 2], [True, False, True]) == [2, 0]
    assert least_busy([2, 2, 2], [True, True, True]) == [0, 1, 2]  # ties by index
    assert least_busy([0, 0], [False, False]) == []


def _dispatcher(
    n: int, ready: list[bool]
) -> tuple[Dispatcher, list[socket.socket], OpenConnections]:
    counts = OpenConnections(n)
    listener = socket.socket()
    d = Dispatcher(listener, counts, lambda i: ready[i])
    child_ends = []
    for i in range(n):
        parent_end, child_end = channel_pair()
        d.replace_channel(i, parent_end)
        child_ends.append(child_end)
    listener.close()
    return d, child_ends, counts


def _received(child_end: socket.socket) -> int:
    child_end.setblocking(False)
    got = 0
    while True:
        try:
            _msg, fds, _f, _a = socket.recv_fds(child_end, 16, 16)
        except BlockingIOError:
            return got
        for fd in fds:
            socket.socket(fileno=fd).close()
        got += len(fds)


def test_connections_go_to_the_least_busy_ready_child() -> None:
    d, ends, counts = _dispatcher(3, [True, True, False])
    counts.handed[0] = 5  # child 0 already holds five connections
    for _ in range(6):
        a, b = socket.socketpair()
        with a, b:
            assert d.hand_over(a)
    # child 1 catches up with child 0, then the tie goes to the lower index; child 2 is not
    # ready and gets nothing
    assert [_received(e) for e in ends] == [1, 5, 0]
    assert counts.snapshot() == [6, 5, 0]


def test_a_child_whose_channel_is_gone_is_skipped() -> None:
    d, ends, counts = _dispatcher(2, [True, True])
    ends[0].close()  # child 0 died
    a, b = socket.socketpair()
    with a, b:
        assert d.hand_over(a)
    assert counts.snapshot() == [0, 1]
    assert _received(ends[1]) == 1
    ends[1].close()
    a, b = socket.socketpair()
    with a, b:
        assert not d.hand_over(a)  # nobody could take it: the caller closes it
    assert counts.snapshot() == [0, 1]


def test_a_child_that_stopped_reading_is_skipped_without_blocking() -> None:
    """A child whose loop is stuck stops draining its channel; once the queue is full the
    parent's send fails at once (the parent's end does not block) and the next child gets it."""
    d, ends, counts = _dispatcher(2, [True, True])
    counts.handed[1] = 10**6  # child 1 looks busy, so everything goes to child 0 first
    sent = 0
    while counts.snapshot()[1] == 10**6 and sent < 100_000:  # until child 0's queue is full
        a, b = socket.socketpair()
        with a, b:
            assert d.hand_over(a)
        sent += 1
    assert counts.snapshot()[1] == 10**6 + 1  # the first connection child 0 could not queue
    assert counts.snapshot()[0] == sent - 1 == _received(ends[0])
    assert _received(ends[1]) == 1


def test_a_restarted_child_starts_from_zero() -> None:
    d, _ends, counts = _dispatcher(2, [True, True])
    counts.handed[1] = 7
    counts.closed[1] = 2  # the old child closed two of its nine before it died
    parent_end, child_end = channel_pair()
    d.replace_channel(1, parent_end)
    assert counts.snapshot() == [0, 0]
    assert (counts.handed[1], counts.closed[1]) == (0, 0)
    child_end.close()


async def test_a_child_adopts_handed_connections_and_counts_them_closed() -> None:
    """The child's side: a descriptor sent over the channel becomes a connection served by
    the child's protocol in its loop; closing it takes it off the child's count."""
    counts = OpenConnections(1)
    parent_end, child_end = channel_pair()
    served = asyncio.get_running_loop().create_future()

    class Echo(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.write(data.upper())  # type: ignore[attr-defined]

        def connection_lost(self, exc: Exception | None) -> None:
            served.set_result(True)

    stop = adopt_connections(child_end, Echo, counts.closed, 0)
    try:
        server_side, client = socket.socketpair()
        counts.add(0, 1)  # as the parent counts it when handing over
        socket.send_fds(parent_end, [b"c"], [server_side.fileno()])
        server_side.close()
        reader, writer = await asyncio.open_connection(sock=client)
        writer.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), 5) == b"PING"
        writer.close()
        await asyncio.wait_for(served, 5)
        assert counts.snapshot() == [0]
    finally:
        stop()
        parent_end.close()
        child_end.close()


def _hand_over_until_refused(d: Dispatcher) -> None:
    """Hand new connections over until no child takes one (their queues are full)."""
    while True:
        a, b = socket.socketpair()
        with a, b:
            if not d.hand_over(a):
                return


def test_a_full_channel_is_waited_for_not_closed() -> None:
    """Every ready child's queue is full (a burst of new connections while both were busy):
    the parent waits for one to drain instead of closing the connection, and gives up only
    after its patience, or at once when no child is ready."""
    d, ends, counts = _dispatcher(1, [True])
    _hand_over_until_refused(d)  # fills child 0's queue
    queued = counts.snapshot()[0]
    a, b = socket.socketpair()
    with a, b:
        started = time.monotonic()
        assert not d.hand_over_patiently(a, patience_s=0.3)  # nobody drains: it gives up
        assert time.monotonic() - started >= 0.3
        threading.Timer(0.3, _received, [ends[0]]).start()  # the child catches up
        assert d.hand_over_patiently(a, patience_s=5)
    assert counts.snapshot()[0] == queued + 1
    ready = [False]
    d2, _ends2, _counts2 = _dispatcher(1, ready)
    a, b = socket.socketpair()
    with a, b:
        started = time.monotonic()
        assert not d2.hand_over_patiently(a, patience_s=5)
        assert time.monotonic() - started < 1


def test_a_channel_that_failed_otherwise_is_not_waited_for() -> None:
    """Only a full queue drains. A ready child whose end of the channel is closed (it died
    between two polls) fails every send at once and selects writable at once: waiting on it
    would spin for the whole patience, so the parent gives up on it at once and waits only on
    channels that were full."""
    d, ends, _counts = _dispatcher(1, [True])
    ends[0].close()
    a, b = socket.socketpair()
    with a, b:
        started = time.monotonic()
        assert not d.hand_over_patiently(a, patience_s=5)
        assert time.monotonic() - started < 1
    d2, ends2, counts2 = _dispatcher(2, [True, True])
    ends2[0].close()
    counts2.handed[0] = 10**6  # the dead child is tried last, after the full one
    _hand_over_until_refused(d2)  # fills child 1's queue
    queued = counts2.snapshot()[1]
    a, b = socket.socketpair()
    with a, b:
        started = time.monotonic()
        threading.Timer(0.5, _received, [ends2[1]]).start()  # child 1 catches up
        assert d2.hand_over_patiently(a, patience_s=5)
        assert time.monotonic() - started >= 0.4
    assert counts2.snapshot()[1] == queued + 1


def _count_closes_forever(closed: Any, index: int) -> None:
    """A child that does nothing but count connections closing (killed by the test)."""
    while True:
        count_closed(closed, index)


def test_a_child_killed_while_counting_never_stalls_the_parent() -> None:
    """A child SIGKILLed (the OOM killer) at any moment of its connection bookkeeping leaves
    nothing behind that the parent waits on: its restart and the next hand-over return at once.
    With a lock shared with the children (the code before), the first kill in this loop left
    it held and the parent's restart waited forever (a throwaway run of this loop against it)."""
    ctx = multiprocessing.get_context("spawn")
    d, ends, counts = _dispatcher(1, [True])
    for _ in range(5):
        child = ctx.Process(target=_count_closes_forever, args=(counts.closed, 0), daemon=True)
        child.start()
        deadline = time.monotonic() + 30
        while counts.closed[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.001)  # until it is counting
        assert counts.closed[0] != 0
        time.sleep(random.uniform(0.005, 0.05))
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join(10)
        done = threading.Event()

        def restart_and_hand_over(done: threading.Event = done) -> None:
            parent_end, child_end = channel_pair()
            d.replace_channel(0, parent_end)
            ends.append(child_end)
            a, b = socket.socketpair()
            with a, b:
                assert d.hand_over(a)
            done.set()

        threading.Thread(target=restart_and_hand_over, daemon=True).start()
        assert done.wait(5), "the parent waited on something the killed child held"
        assert counts.snapshot() == [1]  # the restart started child 0 from zero
    for end in ends:
        end.close()
