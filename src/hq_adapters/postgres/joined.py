"""One statement for several waiting worker requests: calls that queue for a connection join.

Every worker request is one call of a ``tracker_gated_*`` function that returns one row. When
a process's worker lanes (``Database(worker_lanes=)``) or connections are all busy, requests
wait. Requests that wait for the same statement on the same project join one *group*, which
waits as one holder and runs as one statement: a ``*_joined`` block of ``sql/worker_ops.sql``
calls the function once per request in a nested loop over the packed arguments (PostgreSQL runs
the calls one after the other, each seeing what the earlier ones wrote): one round trip, one
top-level statement and one commit for all of them. A call with a free lane and connection
runs alone, exactly as before; the more requests queue, the more each statement carries.

If the joined statement fails (one call raised, a deadlock), nothing of it was committed, and
each call runs again alone on the same connection, so each request gets its own answer or its
own error and nothing runs twice. A group is one project's: every lock its calls take (the
project's rate bucket, its jobs) is that project's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from hq_adapters.postgres.errors import translated

MAX_JOINED = 8
"""Calls per joined statement: past a few, the round trip and commit saved are a small part."""

MAX_ITEMS = 16
"""Larger requests run alone: their own size already spreads a statement's fixed cost, and a
group of them would hold its first caller's answer for the whole group (claim p99 at B=64
W=64 rose from 151 to 202 ms with them joined; benchmarks/notes/optimisations.md, row 44)."""


def packed(calls: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The joined statement's arguments for ``calls`` (each the one-call statement's
    arguments): a scalar argument becomes the list of every call's value; a list argument
    becomes one flat list followed by each call's 1-based first and last index in it (an empty
    list gets last = first - 1, which slices to an empty array)."""
    out: list[Any] = []
    for position, first in enumerate(calls[0]):
        if isinstance(first, list):
            flat: list[Any] = []
            lo: list[int] = []
            hi: list[int] = []
            for args in calls:
                lo.append(len(flat) + 1)
                flat.extend(args[position])
                hi.append(len(flat))
            out += [flat, lo, hi]
        else:
            out.append([args[position] for args in calls])
    return out


Call = tuple[tuple[Any, ...], "asyncio.Future[Any]"]
"""One caller's arguments and the future its row goes to."""


async def run_joined(conn: Any, joined_text: str, calls: Sequence[Call]) -> bool:
    """Run ``calls`` as the joined statement ``joined_text`` (arguments :func:`packed`, one
    row per call tagged ``hq_slot``) and hand each caller its row; False when it failed and
    committed nothing (then each call runs alone). A lost connection is raised."""
    try:
        rows = await conn.fetch(joined_text, *packed([args for args, _future in calls]))
    except Exception:
        if conn.is_closed():
            raise
        return False
    by_slot = {row["hq_slot"]: row for row in rows}
    for slot, (_args, future) in enumerate(calls):
        if not future.done():  # its caller may have gone: the work is done all the same
            future.set_result(by_slot.get(slot))  # no row: what fetchrow answers too
    return True


async def run_alone(conn: Any, text: str, args: tuple[Any, ...], future: asyncio.Future[Any]) -> None:
    """One call on its own; its error (translated where it has a domain meaning) goes to its
    own caller. A lost connection is raised as well: the calls after it cannot run either."""
    try:
        with translated():
            row = await conn.fetchrow(text, *args)
    except Exception as exc:
        if not future.done():
            future.set_exception(exc)
        if conn.is_closed():
            raise
    else:
        if not future.done():
            future.set_result(row)


def fail_all(calls: Sequence[Call], exc: BaseException) -> None:
    """Hand ``exc`` to every caller still waiting (a cancellation as a lost connection)."""
    error = exc if isinstance(exc, Exception) else ConnectionError("the statement was cancelled")
    for _args, future in calls:
        if not future.done():
            future.set_exception(error)


class Group:
    """Calls of one statement on one key, waiting for a connection together; ``joined`` names
    the block that runs several of them at once."""

    __slots__ = ("calls", "joined", "key", "name")

    def __init__(self, name: str, joined: str, key: str) -> None:
        self.name = name
        self.joined = joined
        self.key = key
        self.calls: list[Call] = []


class Joiner:
    """The groups waiting for a connection, by (statement, key)."""

    __slots__ = ("_open", "_run", "_tasks")

    def __init__(self, run: Callable[[Group], Any]) -> None:
        self._open: dict[tuple[str, str], Group] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._run = run

    def join(
        self, name: str, joined: str, key: str, args: tuple[Any, ...]
    ) -> asyncio.Future[Any]:
        """A future for this call's row; starts a group (and its task) when none is open."""
        group = self._open.get((name, key))
        if group is None or len(group.calls) >= MAX_JOINED:
            group = Group(name, joined, key)
            self._open[(name, key)] = group
            task = asyncio.get_running_loop().create_task(self._run(group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        group.calls.append((args, future))
        return future

    def close(self, group: Group) -> list[Call]:
        """Take the group out of the open ones (no call joins it any more); its live calls."""
        if self._open.get((group.name, group.key)) is group:
            del self._open[(group.name, group.key)]
        return [(args, f) for args, f in group.calls if not f.done()]

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
