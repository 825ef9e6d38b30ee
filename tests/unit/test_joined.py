"""Worker calls that wait for a connection join one statement (hq_adapters.postgres.joined):
the statement's text, which calls join which group, and how each caller gets its own row or
its own error."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from hq_adapters.postgres import joined
from hq_adapters.postgres.joined import (
    Call,
    Group,
    Joiner,
    fail_all,
    packed,
    run_alone,
    run_joined,
)
from hq_domain.errors import NotFound

TEXT = "SELECT joined"


def test_scalars_become_lists_and_lists_one_flat_list_with_bounds() -> None:
    calls = [
        (b"d1", "p", ["a", "b"], 4, []),
        (b"d2", "p", [], 1, ["x"]),
        (None, "p", ["c"], 2, ["y", "z"]),
    ]
    assert packed(calls) == [
        [b"d1", b"d2", None],
        ["p", "p", "p"],
        ["a", "b", "c"], [1, 3, 3], [2, 2, 3],  # the second call's empty list: 3..2
        [4, 1, 2],
        ["x", "y", "z"], [1, 1, 2], [0, 1, 3],
    ]  # fmt: skip


async def test_calls_of_one_statement_and_key_join_one_group() -> None:
    groups: list[Group] = []
    started = asyncio.Event()

    async def run(group: Group) -> None:
        groups.append(group)
        await started.wait()

    joiner = Joiner(run)
    futures = [
        joiner.join("claim", "claim_x", "p", (1,)),
        joiner.join("claim", "claim_x", "p", (2,)),
        joiner.join("claim", "claim_x", "q", (3,)),  # another project
        joiner.join("complete", "complete_x", "p", (4,)),  # another statement
        joiner.join("claim", "claim_x", "p", (5,)),
    ]
    await asyncio.sleep(0)
    assert [(g.name, g.key, [a for a, _f in g.calls]) for g in groups] == [
        ("claim", "p", [(1,), (2,), (5,)]),
        ("claim", "q", [(3,)]),
        ("complete", "p", [(4,)]),
    ]
    assert not any(f.done() for f in futures)
    started.set()
    await joiner.aclose()


async def test_a_full_group_or_a_closed_one_starts_another() -> None:
    groups: list[Group] = []

    async def run(group: Group) -> None:
        groups.append(group)

    joiner = Joiner(run)
    for i in range(joined.MAX_JOINED + 1):
        joiner.join("claim", "claim_x", "p", (i,))
    await asyncio.sleep(0)
    assert [len(g.calls) for g in groups] == [joined.MAX_JOINED, 1]
    assert [a for a, _f in joiner.close(groups[1])] == [(joined.MAX_JOINED,)]
    joiner.join("claim", "claim_x", "p", ("late",))  # the closed group takes no more calls
    await asyncio.sleep(0)
    assert [a for a, _f in groups[2].calls] == [("late",)]
    await joiner.aclose()


async def test_a_caller_that_left_is_not_run() -> None:
    joiner = Joiner(lambda group: asyncio.sleep(0))
    gone = joiner.join("claim", "claim_x", "p", (1,))
    stays = joiner.join("claim", "claim_x", "p", (2,))
    gone.cancel()
    group = next(iter(joiner._open.values()))
    assert [a for a, _f in joiner.close(group)] == [(2,)]
    assert not stays.done()
    await joiner.aclose()


class FakeConn:
    """fetch/fetchrow answer from a script: a list of rows, or an exception to raise."""

    def __init__(self, answer: Any = None, closed: bool = False) -> None:
        self.answer = answer
        self.closed = closed
        self.sent: list[tuple[str, tuple[Any, ...]]] = []

    def is_closed(self) -> bool:
        return self.closed

    async def fetch(self, sql: str, *args: Any) -> Any:
        self.sent.append((sql, args))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.sent.append((sql, args))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return {"args": args}


def _calls(*args: tuple[Any, ...]) -> list[Call]:
    loop = asyncio.get_running_loop()
    return [(a, loop.create_future()) for a in args]


async def test_each_caller_gets_the_row_of_its_slot() -> None:
    calls = _calls((1, "a"), (2, "b"), (3, "c"))
    conn = FakeConn([{"hq_slot": 2, "v": "c"}, {"hq_slot": 0, "v": "a"}])
    assert await run_joined(conn, TEXT, calls)
    assert conn.sent == [(TEXT, ([1, 2, 3], ["a", "b", "c"]))]
    assert [f.result() for _a, f in calls] == [
        {"hq_slot": 0, "v": "a"},
        None,  # no row, as fetchrow answers: never run again, its work is committed
        {"hq_slot": 2, "v": "c"},
    ]


async def test_a_failed_joined_statement_leaves_every_call_to_run_alone() -> None:
    calls = _calls((1, "a"), (2, "b"))
    conn = FakeConn(asyncpg.exceptions.DivisionByZeroError("boom"))
    assert not await run_joined(conn, TEXT, calls)
    assert not any(f.done() for _a, f in calls)


async def test_a_lost_connection_is_raised_not_retried() -> None:
    calls = _calls((1, "a"), (2, "b"))
    conn = FakeConn(asyncpg.exceptions.ConnectionDoesNotExistError("gone"), closed=True)
    with pytest.raises(asyncpg.exceptions.ConnectionDoesNotExistError):
        await run_joined(conn, TEXT, calls)
    with pytest.raises(asyncpg.exceptions.ConnectionDoesNotExistError):
        await run_alone(conn, TEXT, *calls[0])
    assert isinstance(calls[0][1].exception(), asyncpg.exceptions.ConnectionDoesNotExistError)


async def test_a_call_run_alone_gets_its_own_error_translated() -> None:
    (call,) = _calls((1, "a"))
    violation = asyncpg.exceptions.ForeignKeyViolationError("gone")
    violation.constraint_name = "tracker_workers_user_id_fkey"  # type: ignore[attr-defined]
    await run_alone(FakeConn(violation), TEXT, *call)
    assert isinstance(call[1].exception(), NotFound)
    (ok,) = _calls((2, "b"))
    await run_alone(FakeConn(), TEXT, *ok)
    assert ok[1].result() == {"args": (2, "b")}


async def test_fail_all_hands_a_cancellation_on_as_a_lost_connection() -> None:
    calls = _calls((1,), (2,))
    calls[0][1].set_result("done already")
    fail_all(calls, asyncio.CancelledError())
    assert calls[0][1].result() == "done already"
    assert isinstance(calls[1][1].exception(), ConnectionError)
