"""One Hypothesis state machine for every Store adapter (STYLE §3).

``make_state_machine(factory)`` builds a ``RuleBasedStateMachine`` that drives a fresh store
per example (ManualClock time) next to the reference model in :mod:`tests.support.model`,
predicting every answer and comparing the whole observable state after every step.

Hypothesis rules are synchronous: the machine class owns one event loop (shared by its
examples, so a factory may keep a pool between them) and runs each call to completion.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable
from typing import Any, TypeVar

from hypothesis import event as _hyp_event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from hq_domain.clock import ManualClock
from hq_domain.errors import HqError
from hq_domain.jobs import ArtifactReceipt, ExecutionError, JobSpec, JobStatus, Outcome
from hq_domain.progress import minute_of
from hq_domain.projects import ProjectPut
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem
from tests.support.factory import StoreFactory
from tests.support.model import NS, Expected, MJob, Model, spec_of

T = TypeVar("T")
USER = "sm-worker"
PROJECTS = ("p0", "p1", "p2")
WORKERS = ("w0", "w1")

OUTCOMES = (Outcome("success", 200, "https://x/1", {"m": 1}), Outcome("skipped"))
RECEIPTS: tuple[tuple[ArtifactReceipt, ...] | None, ...] = (
    None, (), (ArtifactReceipt("r1", "iss", "obj", "md5:" + "0f" * 16, 5, 1),),
)
ERRORS = (ExecutionError("e1", "boom", {"d": [1]}), ExecutionError("e2"))

job_drafts = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d"]),  # value
        st.sampled_from([None, "x", "y", "z"]),  # external id (when the mode wants one)
        st.sampled_from([None, None, "seed", "asset"]),  # type
        st.sampled_from([None, None, "", "v"]),  # via
        st.sampled_from([0, 0, 2]),  # hops
        # Random keys are always sent explicitly (None = derived from the value, so repeated
        # identities usually agree): generated keys would make the claim order, and so the
        # run, differ between replays. The contract suite covers generated keys.
        st.sampled_from([None, None, None, 0, 1, 7, -(2**31), 2**31 - 1]),
    ),
    min_size=1,
    max_size=5,
)


def event(label: str) -> None:
    """Coverage statistics (``--hypothesis-show-statistics``); a no-op outside a test run."""
    with contextlib.suppress(InvalidArgument):
        _hyp_event(label)


def _check_error(err: HqError, expected: tuple[HqError, ...]) -> None:
    assert any(
        type(err) is type(e) and err.message == e.message and err.details == e.details
        and err.retry_after_ms == e.retry_after_ms
        for e in expected
    ), f"store raised {err!r} {err.details} {err.retry_after_ms}, model expected {expected!r}"


def make_state_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    class StoreMachine(RuleBasedStateMachine):
        _loop: asyncio.AbstractEventLoop | None = None

        def __init__(self) -> None:
            super().__init__()
            cls = type(self)
            if cls._loop is None or cls._loop.is_closed():
                cls._loop = asyncio.new_event_loop()
            self.clock = ManualClock()
            self.store = self.run(factory.create(self.clock))
            self.run(self.store.put_user(USER, UserStatus.ACTIVE, [Role.WORKER]))
            self.model = Model()
            self.attempts: list[tuple[str, int, str, str]] = []  # project, job, attempt, worker
            self.max_job_id = 0

        def run(self, aw: Awaitable[T]) -> T:
            assert self._loop is not None
            return self._loop.run_until_complete(aw)

        def teardown(self) -> None:
            self.run(factory.dispose(self.store))

        @property
        def now_s(self) -> int:
            return self.clock.now_ns() // NS

        def expect(self, predict, call):
            """Run the model's prediction, then the store; compare error outcomes."""
            try:
                predicted = predict()
            except Expected as exp:
                try:
                    self.run(call())
                except HqError as err:
                    _check_error(err, exp.errors)
                    event(f"error: {type(err).__name__}")
                    return None, None
                raise AssertionError(f"store succeeded, model expected {exp.errors!r}") from None
            return self.run(call()), predicted

        # --- rules: projects ----------------------------------------------------------
        @initialize(
            modes=st.lists(st.sampled_from(["none", "external_id", "unique_value"]), min_size=3, max_size=3),
            orders=st.lists(st.sampled_from(["fifo", "random"]), min_size=3, max_size=3),
            qps=st.sampled_from([None, None, 2.5, 10.0]),
            max_resets=st.sampled_from([0, 0, 1, 3]),
            drafts=job_drafts,
        )
        def create_projects(self, modes, orders, qps, max_resets, drafts):
            """Start with every project active and holding some work, so most steps do some."""
            for i, pid in enumerate(PROJECTS):
                fields = {"status": "active", "identity_mode": modes[i], "claim_order": orders[i],
                          "max_resets": max_resets, "dispatch_qps": qps if i == 0 else None}
                self.model.put_project(pid, fields, self.now_s)
                self.run(self.store.put_project(pid, ProjectPut(**fields)))
                unique = [(f"{d[0]}{n}", None, *d[2:]) for n, d in enumerate(drafts)]
                self._enqueue(pid, unique, raw_ids=1)

        @rule(
            pid=st.sampled_from(PROJECTS),
            status=st.sampled_from(["active"] * 4 + ["draining", "archived"]),
            mode=st.sampled_from([None] * 5 + ["none", "external_id", "unique_value"]),
            order=st.sampled_from([None, "fifo", "random"]),
            max_resets=st.sampled_from([None, 0, 0, 1, 3]),
            max_jobs=st.sampled_from([None, 1, 2, 3]),
            qps=st.sampled_from([None, None, None, 2.5, 10.0, 2000.0]),
        )
        def put_project(self, pid, status, mode, order, max_resets, max_jobs, qps):
            fields: dict[str, Any] = {
                "status": status, "identity_mode": mode, "claim_order": order,
                "max_resets": max_resets, "max_jobs_per_claim": max_jobs, "dispatch_qps": qps,
            }
            summary, predicted = self.expect(
                lambda: self.model.put_project(pid, fields, self.now_s),
                lambda: self.store.put_project(pid, ProjectPut(**fields)),
            )
            if predicted is not None:
                assert summary.project.policy_version == predicted.policy_version

        @rule(pid=st.sampled_from(PROJECTS))
        def delete_project(self, pid):
            self.expect(lambda: self.model.delete_project(pid), lambda: self.store.delete_project(pid))

        @rule(active=st.sampled_from([True, True, False]))
        def set_worker_status(self, active):
            status = UserStatus.ACTIVE if active else UserStatus.SUSPENDED
            self.run(self.store.put_user(USER, status, [Role.WORKER]))
            self.model.worker_active = active

        # --- rules: enqueue -----------------------------------------------------------
        @rule(pid=st.sampled_from(PROJECTS), drafts=job_drafts, raw_ids=st.integers(0, 9))
        def enqueue(self, pid, drafts, raw_ids):
            self._enqueue(pid, drafts, raw_ids)

        def _enqueue(self, pid, drafts, raw_ids):
            project = self.model.projects.get(pid)
            specs = []
            for value, ext, typ, via, hops, key in drafts:
                if raw_ids > 0 and project is not None:  # usually follow the identity mode
                    ext = (ext or f"id-{value}") if project.identity_mode == "external_id" else None
                if key is None:
                    key = (ord(value[0]) * 7919) % 2**31 - 2**30
                specs.append(JobSpec(value, ext, typ, via, hops, None, key))
            inserted, fresh = self.expect(
                lambda: self.model.enqueue(pid, specs), lambda: self.store.enqueue(pid, specs)
            )
            if fresh is None:
                return
            assert inserted == len(fresh)
            event(f"enqueue: {min(inserted, 2)}+ inserted")
            p = self.model.projects[pid]
            after = max(p.jobs, default=0)
            new = self.run(self.store.list_jobs(pid, None, after, 200)).jobs
            assert len(new) == len(fresh), (new, fresh)
            for job, spec in zip(new, fresh, strict=True):
                assert job.job_id > self.max_job_id
                self.max_job_id = job.job_id
                assert (job.value, job.external_id) == (spec.value, spec.id)
                assert job.random_key == spec.random_key
                p.jobs[job.job_id] = MJob(
                    job.job_id, pid, spec.value, spec.id, dict(job.spec), job.random_key,
                    self.now_s, self.now_s,
                )
                assert job.spec == spec_of(spec)

        # --- rules: worker side -------------------------------------------------------
        @rule(
            data=st.data(),
            worker=st.sampled_from(WORKERS),
            max_jobs=st.sampled_from([1, 2, 3, 256]),
            lease=st.sampled_from([1, 5, 30]),
            types=st.sampled_from([(), (), ("seed",), ("asset",), ("seed", "asset")]),
            pv=st.integers(1, 3),
        )
        def claim(self, data, worker, max_jobs, lease, types, pv):
            busy = [p.id for p in self.model.projects.values() if p.counts()["todo"]]
            pid = data.draw(st.sampled_from(busy or PROJECTS) | st.sampled_from(PROJECTS))
            now_ns = self.clock.now_ns()
            result, pred = self.expect(
                lambda: self.model.claim(pid, worker, max_jobs, lease, types, now_ns),
                lambda: self.store.claim(USER, pid, ClaimRequest(worker, max_jobs, lease, types, pv)),
            )
            if pred is None:
                return
            event(f"claim: {min(len(result.jobs), 2)}+ jobs")
            assert [j.job_id for j in result.jobs] == pred.job_ids
            assert (result.retry_after_ms, result.policy_version) == (
                pred.retry_after_ms, pred.policy_version,
            )
            assert result.project_id == pid
            p = self.model.projects[pid]
            for c in result.jobs:
                assert c.lease_expires_at == pred.lease_expires_at
                assert all(c.attempt_id != a[2] for a in self.attempts)
                p.jobs[c.job_id].attempt_id = c.attempt_id
                self.attempts.append((pid, c.job_id, c.attempt_id, worker))

        def _pick(self, data):
            """(project, worker, [(job_id, attempt_id)]) for a mutation: mostly live attempts
            of one project, plus stale/replayed ones, another worker or project now and then."""
            if not self.attempts:
                return data.draw(st.sampled_from(PROJECTS)), "w0", [(1, "at_bogus")]
            live = [
                (p.id, j.job_id, j.attempt_id, j.worker_id)
                for p in self.model.projects.values() for j in p.jobs.values()
                if j.status == "wip" and j.attempt_id
            ]
            use_live = live and data.draw(st.integers(0, 3)) > 0
            pid, job_id, attempt, worker = data.draw(st.sampled_from(live if use_live else self.attempts))
            refs = [(job_id, attempt)]
            same = [(j, a) for p, j, a, _ in self.attempts if p == pid]
            refs += data.draw(st.lists(st.sampled_from(same), max_size=2))
            if data.draw(st.integers(0, 9)) == 0:
                pid = data.draw(st.sampled_from(PROJECTS))
            if data.draw(st.integers(0, 9)) == 0:
                worker = data.draw(st.sampled_from(WORKERS))
            return pid, worker, data.draw(st.permutations(refs))

        def _mutate(self, op, data, payload_of, call):
            pid, worker, refs = self._pick(data)
            items = [(j, a, payload_of(data)) for j, a in refs]
            results, pred = self.expect(
                lambda: self.model.mutate(
                    op, pid, worker, [(j, a, p[0]) for j, a, p in items], self.now_s
                ),
                lambda: call(pid, worker, [(j, a, p[1]) for j, a, p in items]),
            )
            if pred is None:
                return
            got = [(r.applied, r.job_status.value if r.job_status else None, r.lease_expires_at)
                   for r in results]
            assert got == pred
            event(f"{op}: {'some' if any(g[0] for g in got) else 'none'} applied")
            assert [(r.job_id, r.attempt_id) for r in results] == [(j, a) for j, a, _ in items]

        @rule(data=st.data())
        def complete(self, data):
            def payload(d):
                outcome = d.draw(st.sampled_from(OUTCOMES))
                receipts = d.draw(st.sampled_from(RECEIPTS))
                stored = None if receipts is None else [r.to_json() for r in receipts]
                return (outcome.to_json(), stored), (outcome, receipts)

            self._mutate("complete", data, payload, lambda pid, w, items: self.store.complete(
                USER, pid, w, [CompleteItem(j, a, o, r) for j, a, (o, r) in items]))

        @rule(data=st.data())
        def fail(self, data):
            def payload(d):
                retryable, error = d.draw(st.booleans()), d.draw(st.sampled_from(ERRORS))
                return (retryable, error.to_json()), (retryable, error)

            self._mutate("fail", data, payload, lambda pid, w, items: self.store.fail(
                USER, pid, w, [FailItem(j, a, r, e) for j, a, (r, e) in items]))

        @rule(data=st.data(), ext=st.sampled_from([1, 10, 60]))
        def extend(self, data, ext):
            self._mutate("extend", data, lambda d: (ext, None), lambda pid, w, items: (
                self.store.extend_lease(USER, pid, w, ext, [AttemptRef(j, a) for j, a, _ in items])
            ))

        @rule(pid=st.sampled_from(PROJECTS))
        def policy(self, pid):
            project, pred = self.expect(
                lambda: self.model.policy(pid), lambda: self.store.policy(USER, pid)
            )
            if pred is not None:
                assert (project.policy_version, project.max_jobs_per_claim) == (
                    pred.policy_version, pred.max_jobs_per_claim,
                )

        # --- rules: time and maintenance -----------------------------------------------
        @rule(seconds=st.sampled_from([0.1, 0.4, 1, 3, 10, 45]))
        def advance_clock(self, seconds):
            self.clock.advance(seconds)

        @rule(limit=st.sampled_from([1, 2, 1000]))
        def sweep_expired(self, limit):
            candidates = self.model.expired(self.now_s)
            swept = self.run(self.store.sweep_expired(limit))
            assert swept == min(limit, len(candidates))
            event(f"sweep_expired: {min(swept, 2)}+")
            reset = 0
            for j in candidates:
                row = self.run(self.store.get_job(j.project_id, j.job_id))
                if row.status is not JobStatus.WIP:
                    self.model.expire(self.model.projects[j.project_id], j, self.now_s)
                    reset += 1
            assert reset == swept

        @rule()
        def fold_counts(self):
            """Issue 14: folding count deltas (PostgreSQL) never changes a count; the
            invariant checks every project's counts after it, as after every rule."""
            self.run(self.store.fold_counts())

        @rule()
        def record_history(self):
            """Issue 14: the snapshot of the current minute holds every project's counts and
            its running total of resets (expiries, claim-time sweeps, retryable failures;
            never requeues) as the model counts them."""
            self.run(self.store.record_history())
            minute = minute_of(self.now_s)
            for mp in self.model.projects.values():
                [point] = self.run(self.store.project_history(mp.id, minute))
                assert (point.minute_s, point.counts.as_dict(), point.resets) == (
                    minute, mp.counts(), mp.resets)

        # --- rules: admin jobs ---------------------------------------------------------
        def _job_ref(self, data, statuses):
            """(project, job id): usually a job in one of ``statuses``, else any id (or none)."""
            fitting = [
                (p.id, j.job_id) for p in self.model.projects.values() for j in p.jobs.values()
                if j.status in statuses
            ]
            if fitting and data.draw(st.integers(0, 3)) > 0:
                return data.draw(st.sampled_from(fitting))
            pid = data.draw(st.sampled_from(PROJECTS))
            p = self.model.projects.get(pid)
            ids = sorted(p.jobs) if p else []
            return pid, data.draw(st.sampled_from([*ids, self.max_job_id + 1]))

        @rule(data=st.data())
        def requeue(self, data):
            pid, jid = self._job_ref(data, ("failed", "reset_exhausted"))
            _, ok = self.expect(lambda: self.model.requeue(pid, jid, self.now_s) or True,
                                lambda: self.store.requeue_job(pid, jid))
            event(f"requeue: {'applied' if ok else 'rejected'}")

        @rule(data=st.data())
        def delete_job(self, data):
            pid, jid = self._job_ref(data, ("todo", "done", "failed", "reset_exhausted"))
            _, ok = self.expect(lambda: self.model.delete_job(pid, jid) or True,
                                lambda: self.store.delete_job(pid, jid))
            event(f"delete_job: {'applied' if ok else 'rejected'}")

        # --- invariants ----------------------------------------------------------------
        @invariant()
        def state_matches_model(self) -> None:
            summaries = self.run(self.store.list_projects())
            assert [s.project.id for s in summaries] == sorted(self.model.projects)
            for s in summaries:
                mp = self.model.projects[s.project.id]
                got = s.project
                assert (got.status, got.identity_mode, got.claim_order) == (
                    mp.status, mp.identity_mode, mp.claim_order,
                )
                assert (got.dispatch_qps, got.max_jobs_per_claim, got.max_resets) == (
                    mp.dispatch_qps, mp.max_jobs_per_claim, mp.max_resets,
                )
                assert (got.policy_version, got.created_at, got.updated_at) == (
                    mp.policy_version, mp.created_at, mp.updated_at,
                )
                assert got.dispatch_refilled_at_ns == mp.refilled_at_ns
                assert (got.dispatch_tokens is None) == (mp.tokens is None)
                if mp.tokens is not None:
                    assert math.isclose(got.dispatch_tokens, mp.tokens, rel_tol=1e-9, abs_tol=1e-9)
                assert s.job_counts.as_dict() == mp.counts()
                rows = self.run(self.store.list_jobs(mp.id, None, 0, 200)).jobs
                assert [r.job_id for r in rows] == sorted(mp.jobs)
                for row in rows:
                    self._check_row(row, mp.jobs[row.job_id], mp.max_resets_ever)

        def _check_row(self, row, mj: MJob, max_resets_ever: int) -> None:
            wip = row.status is JobStatus.WIP
            assert wip == (row.attempt_id is not None) == (row.worker_id is not None) == (
                row.lease_expires_at is not None
            )
            assert row.reset_count <= max_resets_ever + 1
            expected = (
                mj.status, mj.attempt_id, mj.worker_id, mj.lease_expires_at, mj.reset_count,
                mj.outcome, mj.artifact_receipts, mj.execution_error, mj.completed_at,
                mj.created_at, mj.updated_at, mj.random_key, mj.value, mj.external_id, mj.spec,
                mj.last_worker_id,
            )
            actual = (
                row.status.value, row.attempt_id, row.worker_id, row.lease_expires_at,
                row.reset_count, row.outcome, row.artifact_receipts, row.execution_error,
                row.completed_at, row.created_at, row.updated_at, row.random_key, row.value,
                row.external_id, row.spec, row.last_worker_id,
            )
            assert actual == expected, f"job {row.job_id}: store {actual} != model {expected}"

    StoreMachine.__name__ = f"StoreMachine_{factory.name}"
    return StoreMachine
