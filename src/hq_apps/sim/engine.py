"""The discrete-event fleet simulation: workers drive a Store through its ports in virtual time.

One heap of ``(time_ns, seq, kind, worker, generation, payload)`` events; the ManualClock is set
to each event's time before the store is called, so nothing ever sleeps. Workers behave like the
SDKs (spec §6.2–6.3): claims are paced by ``worker_claim_qps`` (interval ``1/qps``, first wait
``U[0, interval)``, then ``max(now, next) + U[0, interval/10)``), a 429 waits
``retry_after_ms × (1 + U[0, 0.1))`` and retries, an empty claim waits ``retry_after_ms``,
held leases are extended every lease/4, and each finished job is one single-item
complete or fail request.

A worker's *generation* changes when it crashes, which voids every event it had scheduled.
"""

from __future__ import annotations

import gc
import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hq_adapters.memory import MemoryStore
from hq_apps.sim.config import SimConfig
from hq_apps.sim.report import SimReport, WorkerStats
from hq_domain.clock import ManualClock
from hq_domain.errors import ProjectDispatchRateLimited
from hq_domain.jobs import ExecutionError, JobSpec, JobStatus, Outcome
from hq_domain.ports import Store
from hq_domain.projects import ProjectPut
from hq_domain.users import Role
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem

PROJECT = "sim"
USER = "sim-worker"
NS = 1_000_000_000
MAX_ITEMS = 256

CLAIM, BACKOFF, JOB_END, RENEW, RESTART, SWEEP, MONITOR = range(7)
COMPLETE, FAIL_RETRY, FAIL_PERM, CRASH = range(4)

_OUTCOME = Outcome(kind="ok")
_RETRY_ERR = ExecutionError(code="sim_retryable", message="simulated retryable failure")
_PERM_ERR = ExecutionError(code="sim_permanent", message="simulated permanent failure")


@dataclass(slots=True, eq=False)
class _Worker:
    slot: int
    worker_id: str
    gen: int = 0
    held: dict[int, str] = field(default_factory=dict)  # job_id → attempt_id
    pending: bool = False  # a claim is scheduled or being retried
    next_allowed: int | None = None  # SDK pacing state (ns)
    last_paced: int | None = None
    stats: WorkerStats = field(default_factory=WorkerStats)


@dataclass(slots=True)
class _Tally:
    events: int = 0
    claim_requests: int = 0
    paced_claims: int = 0
    empty_claims: int = 0
    rate_limited: int = 0
    dispatched: int = 0
    first_dispatch: int | None = None
    last_dispatch: int | None = None
    done: int = 0
    failed: int = 0
    exhausted_by_fail: int = 0
    retried: int = 0
    lease_lost: int = 0
    crashes: int = 0
    abandoned: int = 0
    extends: int = 0
    swept: int = 0
    per_second: dict[int, int] = field(default_factory=dict)  # virtual second → dispatched
    claim_log: list[tuple[int, int]] = field(default_factory=list)


class Simulation:
    """One run. ``store_factory`` lets tests swap the adapter; the default is MemoryStore."""

    def __init__(
        self,
        config: SimConfig,
        store_factory: Callable[[ManualClock], Store] = MemoryStore,
    ) -> None:
        self.cfg = config
        self.clock = ManualClock()
        self.t0 = self.clock.now_ns()
        self.store = store_factory(self.clock)
        self.rng = random.Random(config.seed)
        self._heap: list[tuple[int, int, int, _Worker | None, int, object]] = []
        self._seq = 0
        self.tally = _Tally()
        self.workers: list[_Worker] = []
        self._duration = config.duration.sampler(self.rng)
        qps = config.worker_claim_qps
        self._interval = None if qps is None else max(1, math.ceil(NS / qps))  # as the Go SDK
        self._terminal = 0
        self._end: int | None = None
        self.policy_version = 1

    # --- setup ----------------------------------------------------------------------------
    async def setup(self) -> None:
        cfg = self.cfg
        summary = await self.store.put_project(
            PROJECT,
            ProjectPut(
                status="active",
                identity_mode="none",
                claim_order=cfg.claim_order,
                dispatch_qps=cfg.dispatch_qps,
                worker_claim_qps=cfg.worker_claim_qps,
                max_jobs_per_claim=cfg.batch,
                max_resets=cfg.max_resets,
                recommended_lease_seconds=cfg.lease_s,
            ),
        )
        self.policy_version = summary.project.policy_version
        await self.store.bootstrap_user(USER, [Role.WORKER], "sim-token")
        bits = self.rng.getrandbits
        for start in range(0, cfg.jobs, cfg.enqueue_batch):
            stop = min(cfg.jobs, start + cfg.enqueue_batch)
            specs = [
                JobSpec(value=f"job-{i}", random_key=bits(32) - 2**31)
                for i in range(start, stop)
            ]
            await self.store.enqueue(PROJECT, specs)

    # --- scheduling -----------------------------------------------------------------------
    def _push(self, t: int, kind: int, w: _Worker | None, gen: int = 0, payload: object = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, w, gen, payload))

    def _new_worker_id(self, w: _Worker) -> str:
        return f"w{w.slot}" if w.gen == 0 else f"w{w.slot}r{w.gen}"

    def _ready(self, w: _Worker, t: int) -> None:
        """The worker wants to claim at ``t``: apply SDK pacing, then schedule the request."""
        if w.pending:
            return
        w.pending = True
        iv = self._interval
        if iv is not None:
            if w.next_allowed is None:
                t = t + int(self.rng.random() * iv)
            else:
                t = max(t, w.next_allowed) + int(self.rng.random() * iv / 10)
            w.next_allowed = t + iv
        self._push(t, CLAIM, w, w.gen, True)

    def _has_room(self, w: _Worker) -> bool:
        return not w.held or self.cfg.slots - len(w.held) >= self.cfg.batch

    # --- event handlers -------------------------------------------------------------------
    async def _claim(self, w: _Worker, t: int, paced: bool) -> None:
        cfg, tally = self.cfg, self.tally
        tally.claim_requests += 1
        w.stats.requests += 1
        if paced:
            tally.paced_claims += 1
            w.stats.paced_claims += 1
            if w.last_paced is not None:
                gap = t - w.last_paced
                if w.stats.min_gap_ns is None or gap < w.stats.min_gap_ns:
                    w.stats.min_gap_ns = gap
            w.last_paced = t
            if w.stats.first_claim_ns is None:
                w.stats.first_claim_ns = t
            w.stats.last_claim_ns = t
        want = min(cfg.batch, cfg.slots - len(w.held))
        request = ClaimRequest(w.worker_id, want, cfg.lease_s, (), self.policy_version)
        try:
            result = await self.store.claim(USER, PROJECT, request)
        except ProjectDispatchRateLimited as exc:
            tally.rate_limited += 1
            if cfg.record_claims:
                tally.claim_log.append((t, 0))
            delay = exc.retry_after_ms * 1_000_000 * (1.0 + 0.1 * self.rng.random())
            self._push(t + int(delay), CLAIM, w, w.gen, False)
            return
        w.pending = False
        jobs = result.jobs
        n = len(jobs)
        if cfg.record_claims:
            tally.claim_log.append((t, n))
        if n == 0:
            tally.empty_claims += 1
            # Idle until retry_after_ms; a worker that still holds jobs claims again when
            # one of them ends (or then, whichever comes first).
            self._push(t + result.retry_after_ms * 1_000_000, BACKOFF, w, w.gen)
            return
        tally.dispatched += n
        w.stats.jobs += n
        if tally.first_dispatch is None:
            tally.first_dispatch = t
        tally.last_dispatch = t
        sec = (t - self.t0) // NS
        tally.per_second[sec] = tally.per_second.get(sec, 0) + n
        rand, duration, held = self.rng.random, self._duration, w.held
        crash, retry, perm = cfg.crash, cfg.crash + cfg.fail_retryable, (
            cfg.crash + cfg.fail_retryable + cfg.fail_permanent
        )
        for job in jobs:
            held[job.job_id] = job.attempt_id
            u = rand()
            outcome = (
                CRASH if u < crash else FAIL_RETRY if u < retry else FAIL_PERM if u < perm else COMPLETE
            )
            end = t + int(duration() * NS)
            self._push(end, JOB_END, w, w.gen, (job.job_id, job.attempt_id, outcome))
        if cfg.renew:
            self._push(t + cfg.lease_s * NS // 4, RENEW, w, w.gen, [j.job_id for j in jobs])
        if self._has_room(w):
            self._ready(w, t)

    async def _job_end(self, w: _Worker, t: int, payload: tuple[int, str, int]) -> None:
        job_id, attempt_id, outcome = payload
        if w.held.get(job_id) != attempt_id:
            return  # lease already lost (renewal rejected)
        tally = self.tally
        if outcome == CRASH:
            tally.crashes += 1
            tally.abandoned += len(w.held)
            w.stats.crashes += 1
            w.held.clear()
            w.gen += 1
            w.pending = False
            w.next_allowed = w.last_paced = None
            if self.cfg.restart_s is not None:
                self._push(t + int(self.cfg.restart_s * NS), RESTART, w, w.gen)
            return
        del w.held[job_id]
        if outcome == COMPLETE:
            items = [CompleteItem(job_id, attempt_id, _OUTCOME, None)]
            (res,) = await self.store.complete(USER, PROJECT, w.worker_id, items)
        else:
            retryable = outcome == FAIL_RETRY
            err = _RETRY_ERR if retryable else _PERM_ERR
            item = FailItem(job_id, attempt_id, retryable, err)
            (res,) = await self.store.fail(USER, PROJECT, w.worker_id, [item])
        if not res.applied:
            tally.lease_lost += 1
        else:
            status = res.job_status
            if status is JobStatus.DONE:
                tally.done += 1
                self._terminal += 1
            elif status is JobStatus.FAILED:
                tally.failed += 1
                self._terminal += 1
            elif status is JobStatus.RESET_EXHAUSTED:
                tally.exhausted_by_fail += 1
                self._terminal += 1
            else:
                tally.retried += 1
            if self._terminal >= self.cfg.jobs:
                self._end = t
        if self._has_room(w):
            self._ready(w, t)

    async def _renew(self, w: _Worker, t: int, job_ids: list[int]) -> None:
        held = w.held
        refs = [AttemptRef(j, held[j]) for j in job_ids if j in held]
        if not refs:
            return
        lost = False
        for i in range(0, len(refs), MAX_ITEMS):
            chunk = refs[i : i + MAX_ITEMS]
            results = await self.store.extend_lease(
                USER, PROJECT, w.worker_id, self.cfg.lease_s, chunk
            )
            self.tally.extends += 1
            for res in results:
                if not res.applied:
                    self.tally.lease_lost += 1
                    held.pop(res.job_id, None)
                    lost = True
        self._push(t + self.cfg.lease_s * NS // 4, RENEW, w, w.gen, [r.job_id for r in refs])
        if lost and self._has_room(w):
            self._ready(w, t)

    async def _sweep(self, t: int) -> None:
        batch = self.cfg.sweep_batch
        while (n := await self.store.sweep_expired(batch)) > 0:
            self.tally.swept += n
            if n < batch:
                break
        self._push(t + int(self.cfg.sweep_interval_s * NS), SWEEP, None)

    async def _monitor(self, t: int) -> None:
        summary = await self.store.get_project(PROJECT)
        assert summary is not None
        counts = summary.job_counts
        if counts.todo == 0 and counts.wip == 0:
            self._end = t
            return
        self._push(t + int(self.cfg.monitor_interval_s * NS), MONITOR, None)

    # --- the loop -------------------------------------------------------------------------
    async def run(self) -> SimReport:
        cfg = self.cfg
        wall0, cpu0 = time.perf_counter(), time.process_time()
        # Bulk-loading a million rows makes the cyclic GC rescan them over and over; load with
        # it off, then move everything loaded to the permanent generation (gc.freeze).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            await self.setup()
        finally:
            gc.freeze()
            if gc_was_enabled:
                gc.enable()
        wall_setup = time.perf_counter() - wall0
        t0 = self.t0
        for slot in range(cfg.workers):
            w = _Worker(slot, f"w{slot}")
            self.workers.append(w)
            await self.store.policy(USER, PROJECT)
            self._ready(w, t0)
        if cfg.sweep_interval_s > 0:
            self._push(t0 + int(cfg.sweep_interval_s * NS), SWEEP, None)
        self._push(t0 + int(cfg.monitor_interval_s * NS), MONITOR, None)
        if cfg.jobs == 0:
            self._end = t0
        limit = t0 + int(cfg.max_sim_s * NS)
        heap, pop, clock = self._heap, heapq.heappop, self.clock
        events = 0
        wall1 = time.perf_counter()
        t = t0
        while heap and self._end is None:
            t, _, kind, w, gen, payload = pop(heap)
            if t > limit:
                t = limit
                break
            clock.set_ns(t)
            events += 1
            if w is not None and gen != w.gen:
                continue  # scheduled before the worker crashed
            if kind == JOB_END:
                await self._job_end(w, t, payload)  # type: ignore[arg-type]
            elif kind == CLAIM:
                await self._claim(w, t, payload)  # type: ignore[arg-type]
            elif kind == BACKOFF:  # the wait after an empty claim has elapsed
                w.pending = False  # type: ignore[union-attr]
                self._ready(w, t)  # type: ignore[arg-type]
            elif kind == RENEW:
                await self._renew(w, t, payload)  # type: ignore[arg-type]
            elif kind == RESTART:
                w.worker_id = self._new_worker_id(w)  # type: ignore[union-attr]
                self._ready(w, t)  # type: ignore[arg-type]
            elif kind == SWEEP:
                await self._sweep(t)
            else:
                await self._monitor(t)
        wall_run = time.perf_counter() - wall1
        cpu = time.process_time() - cpu0
        gc.unfreeze()
        self.tally.events = events
        finished = self._end is not None
        end = self._end if finished else t
        summary = await self.store.get_project(PROJECT)
        assert summary is not None
        still_held = sum(len(w.held) for w in self.workers)
        return SimReport.build(
            cfg,
            self.tally,
            summary.job_counts,
            [w.stats for w in self.workers],
            finished=finished,
            sim_seconds=(end - t0) / NS,
            still_held=still_held,
            wall_setup_s=wall_setup,
            wall_run_s=wall_run,
            cpu_s=cpu,
        )
