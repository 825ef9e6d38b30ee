"""Each rule SQL evaluates inside a statement is one tracker_rule_* function (migration 0008);
here each is checked against its hq_domain function over generated inputs on PostgreSQL
(STYLE §2; docs/architecture.md, "Where each rule lives")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hq_domain import lifecycle
from hq_domain.jobs import JOB_TYPES, job_type, type_accepted
from hq_domain.users import Role, UserStatus, is_active_worker, roles_after_admin_login

pytestmark = pytest.mark.postgres

_SETTINGS = settings(
    max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
# PostgreSQL text holds no NUL and jsonb no lone surrogate.
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12)  # fmt: skip
_STATUS = st.one_of(st.sampled_from([s.value for s in UserStatus]), _TEXT)
_ROLES = st.lists(st.one_of(st.sampled_from([r.value for r in Role]), _TEXT), max_size=4)
_TYPE = st.one_of(st.sampled_from(JOB_TYPES), _TEXT)
_INT4 = st.integers(min_value=0, max_value=2**31 - 2)  # reset_count + 1 stays an integer
_SMALL = st.integers(min_value=0, max_value=6)  # near the reset_exhausted boundary


class Sql:
    """One connection on its own event loop (Hypothesis runs the examples synchronously)."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn: asyncpg.Connection = self.loop.run_until_complete(asyncpg.connect(dsn))

    def val(self, query: str, *args: Any) -> Any:
        return self.loop.run_until_complete(self.conn.fetchval(query, *args))

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


@pytest.fixture(scope="module")
def sql(pg_databases) -> Iterator[Sql]:
    dsn = asyncio.run(pg_databases.create("rules"))
    s = Sql(dsn)
    try:
        yield s
    finally:
        s.close()
        asyncio.run(pg_databases.drop(dsn))


@_SETTINGS
@given(status=_STATUS, roles=_ROLES)
def test_active_worker(sql: Sql, status: str, roles: list[str]) -> None:
    got = sql.val("SELECT tracker_rule_active_worker($1, $2::text[])", status, roles)
    assert got is is_active_worker(status, roles)


_SPEC = st.fixed_dictionaries(
    {}, optional={"type": st.one_of(st.none(), _TYPE), "via": _TEXT, "hops": st.integers(0, 9)}
)


@_SETTINGS
@given(spec=_SPEC, accept=st.lists(_TYPE, max_size=3))
def test_job_type_and_accept_filter(sql: Sql, spec: dict[str, Any], accept: list[str]) -> None:
    """The ``seed`` default for a job without a type, and the claim's accept_types filter."""
    text = json.dumps(spec)
    assert sql.val("SELECT tracker_rule_job_type($1::jsonb)", text) == job_type(spec)
    got = sql.val("SELECT tracker_rule_type_accepted($1::jsonb, $2::text[])", text, accept)
    assert got is type_accepted(job_type(spec), accept)


@_SETTINGS
@given(reset_count=st.one_of(_SMALL, _INT4), max_resets=st.one_of(_SMALL, _INT4))
def test_reset_status(sql: Sql, reset_count: int, max_resets: int) -> None:
    """reset_count against max_resets: the status a reset (expiry, retryable failure) leaves."""
    got = sql.val("SELECT tracker_rule_reset_status($1, $2)", reset_count, max_resets)
    assert got == lifecycle.after_reset(reset_count, max_resets)[0]


@_SETTINGS
@given(retryable=st.booleans(), reset_count=st.one_of(_SMALL, _INT4),
       max_resets=st.one_of(_SMALL, _INT4))  # fmt: skip
def test_fail_status(sql: Sql, retryable: bool, reset_count: int, max_resets: int) -> None:
    got = sql.val(
        "SELECT tracker_rule_fail_status($1, $2, $3)", retryable, reset_count, max_resets
    )
    assert got == lifecycle.fail_status(retryable, reset_count, max_resets)


_FIRSTS = """
SELECT coalesce(array_agg(ARRAY[ord::text, job_id::text, attempt_id] ORDER BY ord), '{}')
FROM tracker_rule_first_items($1::bigint[], $2::text[])
"""


@_SETTINGS
@given(items=st.lists(st.tuples(st.integers(1, 4), st.sampled_from(["a", "b", "at_1"])),
                      max_size=12))  # fmt: skip
def test_first_items(sql: Sql, items: list[tuple[int, str]]) -> None:
    """Match an item to its attempt: the first occurrence of a (job_id, attempt_id) wins."""
    got = sql.val(_FIRSTS, [i for i, _ in items], [a for _, a in items])
    want = [
        [str(n + 1), str(job_id), attempt]
        for n, ((job_id, attempt), first) in enumerate(
            zip(items, lifecycle.first_items(items), strict=True)
        )
        if first
    ]
    assert [list(r) for r in got] == want


@_SETTINGS
@given(roles=_ROLES)
def test_admin_login_roles(sql: Sql, roles: list[str]) -> None:
    """GitHub sign-in of an admin-team member: admin added, every other role kept, sorted."""
    got = sql.val("SELECT tracker_rule_admin_login_roles($1::text[])", roles)
    assert got == [str(r) for r in roles_after_admin_login(tuple(roles))]  # type: ignore[arg-type]
