"""Each SQL statement that moves a job writes what hq_domain.lifecycle says, field for field.

For every transition and every statement that performs it (the claim's one-statement form
under a generic plan and a custom plan, and the transactional claim of an audited project;
complete/fail/extend's one-statement form under both plans; the claim's own sweep, the
transactional claim's sweep_project and the background sweep_expired; requeue_job), a row in
a generated state goes through the store and comes back as the row before with the
transition's :class:`~hq_domain.lifecycle.Changes` applied. The rules these statements
evaluate inside are checked on their own in test_rule_agreement.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hq_adapters.postgres.worker import GENERIC_PLAN_MAX_ITEMS
from hq_domain import lifecycle
from hq_domain.clock import ManualClock, seconds
from hq_domain.jobs import ArtifactReceipt, ExecutionError, Job, JobStatus, Outcome
from hq_domain.ports import Store
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem

pytestmark = pytest.mark.postgres

_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
BIG = GENERIC_PLAN_MAX_ITEMS + 4  # items or jobs above it: the statement runs under a custom plan
# Stale items added to a complete/fail/extend batch: none (the one-item form, migration 0011),
# one (the batch form under its generic plan), BIG (the batch form under a custom plan).
_PADS = st.sampled_from([0, 1, BIG])
_CHANGED = [f.name for f in fields(lifecycle.Changes)]
_ROW = """
INSERT INTO tracker_jobs (project_id, value, random_key, spec, status, attempt_id, worker_id,
                          lease_expires_at, reset_count, outcome, execution_error,
                          artifact_receipts, completed_at, last_worker_id, created_at,
                          updated_at)
VALUES ('p', 'v', 0, '{}', $1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb, $9, $10, 1, 1)
RETURNING job_id
"""

_RESETS = st.integers(min_value=0, max_value=5)
_JSON = st.one_of(st.none(), st.fixed_dictionaries({"code": st.sampled_from(["e", "f"])}))
_EARLIER = st.one_of(st.none(), st.integers(min_value=1, max_value=10**9))


class Harness:
    """A store and a connection of the session's factory database, on an own event loop."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def store(self, max_resets: int, audited: bool = False) -> tuple[Store, int]:
        clock = ManualClock()
        store: Store = self.run(self.factory.create(clock))
        self.run(store.put_user("u", UserStatus.ACTIVE, [Role.WORKER]))
        put = ProjectPut(
            status="active", max_resets=max_resets, worker_claim_qps=1000.0 if audited else None
        )
        self.run(store.put_project("p", put))
        return store, seconds(clock.now_ns())

    def row(self, status: JobStatus, *, attempt: str | None = None, lease: int | None = None,
            reset_count: int = 0, outcome: Any = None, error: Any = None, receipts: Any = None,
            completed_at: int | None = None, last_worker: str | None = "w0") -> int:  # fmt: skip
        async def insert() -> int:
            conn = await asyncpg.connect(self.factory.dsn)
            try:
                return await conn.fetchval(
                    _ROW,
                    status.value,
                    attempt,
                    "w" if attempt else None,
                    lease,
                    reset_count,
                    *(None if v is None else json.dumps(v) for v in (outcome, error, receipts)),
                    completed_at,
                    last_worker,
                )
            finally:
                await conn.close()

        return self.run(insert())

    def job(self, store: Store, job_id: int) -> Job:
        job = self.run(store.get_job("p", job_id))
        assert job is not None
        return job

    def close(self) -> None:
        self.loop.close()


@pytest.fixture(scope="module")
def pg(postgres_factory) -> Iterator[Harness]:
    h = Harness(postgres_factory)
    try:
        yield h
    finally:
        h.close()


def _changed(job: Job) -> dict[str, Any]:
    values = asdict(job)
    return {name: values[name] for name in _CHANGED}


def _assert_applied(before: Job, changes: lifecycle.Changes, after: Job) -> None:
    want = {**_changed(before), **changes.written()}
    assert _changed(after) == want
    untouched = {"job_id", "project_id", "value", "external_id", "spec", "random_key",
                 "created_at"}  # fmt: skip
    assert {k: v for k, v in asdict(after).items() if k in untouched} == {
        k: v for k, v in asdict(before).items() if k in untouched
    }


def _stale(n: int) -> list[AttemptRef]:
    """Items matching no row, to take a batch above the generic-plan size."""
    return [AttemptRef(10**12 + i, f"none_{i}") for i in range(n)]


def _wip(pg: Harness, now: int, reset_count: int, completed_at: int | None, error: Any) -> int:
    return pg.row(JobStatus.WIP, attempt="at_1", lease=now + 60, reset_count=reset_count,
                  completed_at=completed_at, error=error)  # fmt: skip


@_SETTINGS
@given(retryable=st.booleans(), reset_count=_RESETS, max_resets=_RESETS, earlier=_EARLIER,
       error=_JSON, pads=_PADS)  # fmt: skip
def test_fail_op(pg: Harness, retryable: bool, reset_count: int, max_resets: int,
                 earlier: int | None, error: Any, pads: int) -> None:  # fmt: skip
    store, now = pg.store(max_resets)
    try:
        job_id = _wip(pg, now, reset_count, earlier, error)
        before = pg.job(store, job_id)
        item = FailItem(job_id, "at_1", retryable, ExecutionError("boom", "m"))
        pad = [FailItem(r.job_id, r.attempt_id, True, ExecutionError("x"))
               for r in _stale(pads)]  # fmt: skip
        [result, *_] = pg.run(store.fail("u", "p", "w", [item, *pad]))
        want = lifecycle.fail(retryable, reset_count, max_resets, "w",
                              item.error.to_json(), now)  # fmt: skip
        assert result.applied and result.job_status == want.status
        _assert_applied(before, want, pg.job(store, job_id))
    finally:
        pg.run(pg.factory.dispose(store))


@_SETTINGS
@given(receipts=st.booleans(), earlier_error=_JSON, reset_count=_RESETS, pads=_PADS)
def test_complete_op(pg: Harness, receipts: bool, earlier_error: Any, reset_count: int,
                     pads: int) -> None:  # fmt: skip
    store, now = pg.store(3)
    try:
        job_id = _wip(pg, now, reset_count, None, earlier_error)
        before = pg.job(store, job_id)
        sent = (ArtifactReceipt("r", "i", "o", "c", 1, 2),) if receipts else None
        item = CompleteItem(job_id, "at_1", Outcome("ok", 200, "u", {"k": 1}), sent)
        pad = [CompleteItem(r.job_id, r.attempt_id, Outcome("ok"), None)
               for r in _stale(pads)]  # fmt: skip
        [result, *_] = pg.run(store.complete("u", "p", "w", [item, *pad]))
        want = lifecycle.complete(
            "w",
            item.outcome.to_json(),
            None if sent is None else [r.to_json() for r in sent],
            now,
        )
        assert result.applied and result.job_status is JobStatus.DONE
        _assert_applied(before, want, pg.job(store, job_id))
    finally:
        pg.run(pg.factory.dispose(store))


@_SETTINGS
@given(lease_left=st.integers(min_value=1, max_value=900),
       extend=st.integers(min_value=1, max_value=900), pads=_PADS)  # fmt: skip
def test_extend_op(pg: Harness, lease_left: int, extend: int, pads: int) -> None:
    store, now = pg.store(3)
    try:
        job_id = pg.row(JobStatus.WIP, attempt="at_1", lease=now + lease_left)
        before = pg.job(store, job_id)
        refs = [AttemptRef(job_id, "at_1"), *_stale(pads)]
        [result, *_] = pg.run(store.extend_lease("u", "p", "w", extend, refs))
        assert result.applied
        _assert_applied(before, lifecycle.extend(now + lease_left, extend, now),
                        pg.job(store, job_id))  # fmt: skip
    finally:
        pg.run(pg.factory.dispose(store))


@_SETTINGS
@given(path=st.sampled_from(["claim_op generic", "claim_op custom", "claim_fifo"]),
       reset_count=_RESETS, earlier=_EARLIER)  # fmt: skip
def test_claim(pg: Harness, path: str, reset_count: int, earlier: int | None) -> None:
    """claim_op (unlimited project) under both plans, claim_fifo (audited: transactional)."""
    store, now = pg.store(3, audited=path == "claim_fifo")
    try:
        job_id = pg.row(JobStatus.TODO, reset_count=reset_count, completed_at=earlier,
                        error={"code": "old"})  # fmt: skip
        before = pg.job(store, job_id)
        max_jobs = BIG if path == "claim_op custom" else 1
        result = pg.run(store.claim("u", "p", ClaimRequest("w", max_jobs, 60, (), 1)))
        [claimed] = result.jobs
        assert claimed.job_id == job_id
        want = lifecycle.claim(claimed.attempt_id, "w", now + 60, now)
        _assert_applied(before, want, pg.job(store, job_id))
    finally:
        pg.run(pg.factory.dispose(store))


@_SETTINGS
@given(path=st.sampled_from(["claim_op", "sweep_project", "sweep_expired"]),
       reset_count=_RESETS, max_resets=_RESETS, earlier=_EARLIER, error=_JSON)  # fmt: skip
def test_expire(pg: Harness, path: str, reset_count: int, max_resets: int,
                earlier: int | None, error: Any) -> None:  # fmt: skip
    """The claim's own sweep (claim_op, unlimited project), the transactional claim's
    sweep_project (audited project) and the background sweep_expired. The claims accept only
    ``asset`` jobs, so the swept (seed) row is not claimed again in the same call."""
    store, now = pg.store(max_resets, audited=path == "sweep_project")
    try:
        job_id = pg.row(JobStatus.WIP, attempt="at_1", lease=now, reset_count=reset_count,
                        completed_at=earlier, error=error)  # fmt: skip
        before = pg.job(store, job_id)
        if path == "sweep_expired":
            assert pg.run(store.sweep_expired(100)) == 1
        else:
            pg.run(store.claim("u", "p", ClaimRequest("w2", 1, 60, ("asset",), 1)))
        want = lifecycle.expire(reset_count, max_resets, "w", now)
        _assert_applied(before, want, pg.job(store, job_id))
    finally:
        pg.run(pg.factory.dispose(store))


@_SETTINGS
@given(status=st.sampled_from([JobStatus.FAILED, JobStatus.RESET_EXHAUSTED]),
       reset_count=_RESETS, outcome=_JSON, error=_JSON,
       receipts=st.one_of(st.none(), st.just([]), st.just([{"id": "r"}])))  # fmt: skip
def test_requeue_job(pg: Harness, status: JobStatus, reset_count: int, outcome: Any,
                     error: Any, receipts: Any) -> None:  # fmt: skip
    store, now = pg.store(3)
    try:
        job_id = pg.row(status, reset_count=reset_count, outcome=outcome, error=error,
                        receipts=receipts, completed_at=5)  # fmt: skip
        before = pg.job(store, job_id)
        pg.run(store.requeue_job("p", job_id))
        _assert_applied(before, lifecycle.requeue(now), pg.job(store, job_id))
    finally:
        pg.run(pg.factory.dispose(store))
