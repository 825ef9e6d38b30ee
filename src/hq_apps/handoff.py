"""Connections handed from ``tracker serve --processes N``'s parent to its least busy child.

Workers keep one connection open for hours, so how connections are split between the children
at accept time decides how the load is split. When every child accepted on the shared socket,
the kernel woke them all and whichever ran first took every connection waiting (libuv accepts
until the queue is empty): 64 workers ended up 42 / 22 or worse between two children, and the
busier child's requests waited for its core and its pool while the other had room. Its claim
latency was the unit's p99 (benchmarks/notes/optimisations.md, row 26).

Now only the parent accepts. It passes each new connection's descriptor over a private
datagram socket (``SCM_RIGHTS``) to the child with the fewest open connections among those
ready, and closes its own copy; the child adopts it into its event loop as if it had accepted
it. Each child's open connections are counted in shared memory without a lock
(:class:`OpenConnections`): the parent counts the connections it hands over, the child the ones
that close. A connection costs the parent one ``accept`` and one ``sendmsg``; requests never
pass through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("hq.tracker")

ACCEPT_POLL_S = 0.2
# How long a new connection may wait in the parent for a child's channel to drain. A datagram
# channel queues only net.unix.max_dgram_qlen messages (10 by default): a burst of new
# connections while both children were busy filled both queues, and the parent closed the
# connections it could not hand over: their workers saw a reset (the likely cause of one
# `ReadError` in the PgBouncer fault suite on a VM with 25 % steal). Waiting here instead
# leaves the next connections in the kernel's listen queue until a child catches up.
HANDOVER_PATIENCE_S = 10.0
_TOKEN = b"c"


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """(parent end, child end) of a private datagram channel: one message per descriptor."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    parent.set_inheritable(False)
    parent.setblocking(False)  # a stalled child's full queue must not stall the accept loop
    return parent, child


class OpenConnections:
    """How many connections each child holds: those the parent handed over minus those the
    child closed, in two shared arrays with no lock.

    Each cell has one writer: ``handed`` the parent (its accept thread and its supervisor,
    which share a thread lock), ``closed[i]`` child i alone, or the parent while no child i
    runs. A reader may see a count a connection behind, which only shifts one choice of child.
    A lock shared with the children is what this replaces: a child killed (SIGKILL, the OOM
    killer) while holding it left it held, and the parent's next hand-over or restart waited
    on it forever, so the unit stopped taking connections.
    """

    def __init__(self, n: int, ctx: Any = None) -> None:
        ctx = ctx or multiprocessing.get_context("spawn")
        self.handed: Any = ctx.RawArray("q", n)
        self.closed: Any = ctx.RawArray("q", n)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.handed)

    def snapshot(self) -> list[int]:
        return [self.handed[i] - self.closed[i] for i in range(len(self.handed))]

    def add(self, index: int, n: int) -> None:
        """The parent handed child ``index`` ``n`` more connections (``n = -1`` takes back
        one it counted but could not send)."""
        with self._lock:
            self.handed[index] += n

    def restart(self, index: int) -> None:
        """Child ``index`` starts from zero; only while no child ``index`` runs."""
        with self._lock:
            self.handed[index] = 0
            self.closed[index] = 0


def count_closed(closed: Any, index: int) -> None:
    """In child ``index``: one of its connections closed (it is the cell's only writer)."""
    closed[index] += 1


def least_busy(open_connections: Sequence[int], available: Sequence[bool]) -> list[int]:
    """Indexes of the available children, fewest open connections first (ties by index)."""
    return sorted((i for i, ok in enumerate(available) if ok), key=lambda i: open_connections[i])


class Dispatcher:
    """The parent's accept loop (a daemon thread) and its choice of child.

    ``channels[i]`` is the parent end of child i's channel (``None`` while none is running),
    ``ready(i)`` says whether child i serves yet, ``counts`` the open connections per child.
    """

    def __init__(
        self, listener: socket.socket, counts: OpenConnections, ready: Callable[[int], bool]
    ) -> None:
        self._listener = listener
        self._counts = counts
        self._ready = ready
        self.channels: list[socket.socket | None] = [None] * len(counts)
        self._full: list[socket.socket] = []  # the channels the last hand_over found full
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hq-accept", daemon=True)

    def start(self) -> None:
        self._listener.settimeout(ACCEPT_POLL_S)
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting (connections already handed over stay with their children)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(ACCEPT_POLL_S * 5)

    def replace_channel(self, index: int, channel: socket.socket) -> None:
        """A (re)started child's channel; its count starts from zero."""
        old, self.channels[index] = self.channels[index], channel
        self._counts.restart(index)
        if old is not None:
            old.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            if not any(self._ready(i) for i in range(len(self.channels))):
                # every child is (re)starting: new connections wait in the listen queue
                self._stop.wait(ACCEPT_POLL_S)
                continue
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                log.exception("accept failed")
                self._stop.wait(ACCEPT_POLL_S)
                continue
            with conn:
                self.hand_over_patiently(conn)

    def hand_over_patiently(
        self, conn: socket.socket, patience_s: float = HANDOVER_PATIENCE_S
    ) -> bool:
        """:meth:`hand_over`, retried while a ready child's channel is full, for up to
        ``patience_s``; False (the caller closes it) if none took it by then."""
        deadline = time.monotonic() + patience_s
        while not self.hand_over(conn):
            left = deadline - time.monotonic()
            # Only a full queue drains. A channel that failed otherwise (its child's end is
            # closed) selects writable at once and would make this loop spin: not waited for.
            full = self._full
            if left <= 0 or not full or self._stop.is_set():
                log.warning("no serving process took a new connection: closed")
                return False
            select.select([], full, [], min(left, ACCEPT_POLL_S))
        return True

    def hand_over(self, conn: socket.socket) -> bool:
        """Send ``conn`` to the least busy ready child; False (the caller closes it) if none
        could take it."""
        n = len(self.channels)
        self._full = []
        counts = self._counts.snapshot()
        available = [self.channels[i] is not None and self._ready(i) for i in range(n)]
        for i in least_busy(counts, available):
            channel = self.channels[i]
            if channel is None:
                continue
            self._counts.add(i, 1)
            try:
                socket.send_fds(channel, [_TOKEN], [conn.fileno()])
                return True
            except OSError as e:  # the child is gone or its channel is full: try the next
                self._counts.add(i, -1)
                if isinstance(e, BlockingIOError):
                    self._full.append(channel)
        return False


def adopt_connections(
    channel: socket.socket,
    make_protocol: Callable[[], asyncio.Protocol],
    closed_counts: Any,
    index: int,
) -> Callable[[], None]:
    """In a child: adopt every connection the parent sends over ``channel`` into the running
    loop with ``make_protocol``'s protocols, counting each one's close in ``closed_counts``
    (:attr:`OpenConnections.closed`). Returns a function that stops adopting."""
    loop = asyncio.get_running_loop()
    channel.setblocking(False)

    def closed() -> None:
        count_closed(closed_counts, index)

    def counted() -> asyncio.Protocol:
        protocol = make_protocol()
        lost = protocol.connection_lost

        def connection_lost(exc: Exception | None) -> None:
            try:
                lost(exc)
            finally:
                closed()

        protocol.connection_lost = connection_lost  # type: ignore[method-assign]
        return protocol

    adopting: set[asyncio.Task[None]] = set()

    async def adopt(conn: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(counted, conn)
        except OSError:
            conn.close()
            closed()

    def readable() -> None:
        while True:
            try:
                _msg, fds, _flags, _addr = socket.recv_fds(channel, 16, 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                loop.remove_reader(channel.fileno())
                return
            if not _msg and not fds:  # the parent's end closed
                loop.remove_reader(channel.fileno())
                return
            for fd in fds:
                conn = socket.socket(fileno=fd)
                conn.setblocking(False)
                task = loop.create_task(adopt(conn))
                adopting.add(task)
                task.add_done_callback(adopting.discard)

    loop.add_reader(channel.fileno(), readable)

    def stop() -> None:
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(channel.fileno())

    return stop
