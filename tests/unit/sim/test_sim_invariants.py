"""Small deterministic simulations checked against invariants read back through the Store ports."""

from __future__ import annotations

import dataclasses

import pytest

from hq_apps.sim import Duration, SimConfig, Simulation
from hq_apps.sim.engine import PROJECT
from hq_domain.jobs import Job, JobStatus
from hq_domain.ratelimit import capacity

NS = 1_000_000_000
TERMINAL = {JobStatus.DONE, JobStatus.FAILED, JobStatus.RESET_EXHAUSTED}


async def all_jobs(sim: Simulation) -> list[Job]:
    out: list[Job] = []
    after = 0
    while True:
        page = await sim.store.list_jobs(PROJECT, None, after, 1000)
        out.extend(page.jobs)
        if page.next_after_job_id is None:
            return out
        after = page.next_after_job_id


async def run(**kw: object) -> tuple[Simulation, object, list[Job]]:
    sim = Simulation(SimConfig(**kw))  # type: ignore[arg-type]
    report = await sim.run()
    return sim, report, await all_jobs(sim)


def check_terminal_and_resets(cfg: SimConfig, report: object, jobs: list[Job]) -> None:
    r = report
    assert r.finished  # type: ignore[attr-defined]
    assert len(jobs) == cfg.jobs
    assert all(j.status in TERMINAL for j in jobs)
    by = {s: sum(1 for j in jobs if j.status is s) for s in TERMINAL}
    assert (r.done, r.failed, r.reset_exhausted) == (  # type: ignore[attr-defined]
        by[JobStatus.DONE], by[JobStatus.FAILED], by[JobStatus.RESET_EXHAUSTED]
    )
    assert r.done + r.failed + r.reset_exhausted == cfg.jobs  # type: ignore[attr-defined]
    # The fleet's own count of resets agrees with the store's reset_count column.
    assert r.resets == sum(j.reset_count for j in jobs)  # type: ignore[attr-defined]
    for j in jobs:
        if j.status is JobStatus.RESET_EXHAUSTED:
            assert j.reset_count == cfg.max_resets + 1
        else:
            assert j.reset_count <= cfg.max_resets
        assert j.attempt_id is None and j.worker_id is None and j.lease_expires_at is None


MIXED = dict(
    jobs=600,
    workers=12,
    batch=8,
    duration=Duration("exp", 5.0),
    fail_retryable=0.15,
    fail_permanent=0.03,
    crash=0.01,
    restart_s=20.0,
    lease_s=30,
    max_resets=2,
    seed=7,
)


async def test_mixed_failures_and_crashes_end_in_one_terminal_state_each() -> None:
    sim, report, jobs = await run(**MIXED)
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.crashes > 0 and report.resets_by_expiry > 0  # type: ignore[attr-defined]
    assert report.failed > 0 and report.reset_exhausted > 0  # type: ignore[attr-defined]


async def test_random_order_and_concurrency_also_terminate() -> None:
    cfg = dict(MIXED, claim_order="random", concurrency=16, seed=3)
    sim, report, jobs = await run(**cfg)
    check_terminal_and_resets(sim.cfg, report, jobs)


async def test_same_seed_same_run() -> None:
    a = await Simulation(SimConfig(**MIXED)).run()  # type: ignore[arg-type]
    b = await Simulation(SimConfig(**MIXED)).run()  # type: ignore[arg-type]
    c = await Simulation(SimConfig(**dict(MIXED, seed=8))).run()  # type: ignore[arg-type]
    wall = {"wall_setup_s", "wall_run_s", "cpu_s", "events_per_s"}

    def strip(r: object) -> dict[str, object]:
        return {k: v for k, v in dataclasses.asdict(r).items() if k not in wall}  # type: ignore[call-overload]

    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


async def test_leases_shorter_than_jobs_without_renewal_exhaust_every_job() -> None:
    sim, report, jobs = await run(
        jobs=40, workers=4, batch=5, duration=Duration("const", 5.0), lease_s=3,
        renew=False, max_resets=2, seed=1,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.reset_exhausted == 40  # type: ignore[attr-defined]
    assert report.resets == report.resets_by_expiry == 40 * 3  # type: ignore[attr-defined]
    assert all(j.completed_at is None for j in jobs)  # exhausted by expiry keeps it null


async def test_renewal_keeps_long_jobs_alive() -> None:
    sim, report, jobs = await run(
        jobs=40, workers=4, batch=5, duration=Duration("const", 50.0), lease_s=8,
        max_resets=0, seed=1,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.done == 40 and report.resets == 0  # type: ignore[attr-defined]
    assert report.extend_requests > 0  # type: ignore[attr-defined]


async def test_max_resets_zero_exhausts_on_first_retryable_failure() -> None:
    sim, report, jobs = await run(
        jobs=100, workers=5, batch=4, duration=Duration("uniform", 1.0, 3.0),
        fail_retryable=1.0, max_resets=0, seed=2,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.reset_exhausted == 100 and report.resets == 100  # type: ignore[attr-defined]


@pytest.mark.parametrize(("qps", "batch"), [(40.0, 8), (2000.0, 64)])
async def test_dispatch_never_exceeds_the_token_bucket(qps: float, batch: int) -> None:
    sim, report, jobs = await run(
        jobs=2500 if qps > 1000 else 400, workers=20, batch=batch, concurrency=4 * batch,
        duration=Duration("exp", 0.5), dispatch_qps=qps, record_claims=True, seed=5,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.rate_limited_429 > 0  # type: ignore[attr-defined]
    cap = capacity(qps)
    log = [(t, n) for t, n in sim.tally.claim_log if n > 0]
    assert sum(n for _, n in log) == report.dispatched >= 400  # type: ignore[attr-defined]
    # Any window of claims [i, j] hands out at most qps × (t_j − t_i) + capacity jobs, i.e.
    # S_j − qps·t_j ≤ min over i ≤ j of (S_{i−1} − qps·t_i) + capacity (S = running total).
    before, best = 0, float("inf")
    for t, n in log:
        best = min(best, before - qps * t / NS)
        before += n
        assert before - qps * t / NS <= best + cap + 1e-6
    assert report.dispatch_rate <= qps * 1.001 + cap  # type: ignore[attr-defined,operator]
    assert report.dispatch_peak_1s <= qps + cap  # type: ignore[attr-defined]
    # Dispatch-limited, not worker-limited: the busiest second is close to the limit.
    assert report.dispatch_peak_1s >= 0.8 * qps  # type: ignore[attr-defined]


async def test_claim_pacing_respects_worker_claim_qps() -> None:
    qps = 2.0
    sim, report, jobs = await run(
        jobs=300, workers=6, batch=2, duration=Duration("const", 0.1),
        worker_claim_qps=qps, seed=4,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    gaps = [w.stats.min_gap_ns for w in sim.workers if w.stats.min_gap_ns]
    assert gaps and min(gaps) >= NS / qps
    assert report.worker_claim_rate_peak <= qps  # type: ignore[attr-defined,operator]
    # Jobs take 0.1 s, so pacing is the bottleneck: workers claim close to the limit.
    assert report.worker_claim_rate_mean > 0.8 * qps  # type: ignore[attr-defined,operator]


async def test_a_fleet_that_dies_for_good_stalls_and_says_so() -> None:
    _, report, _ = await run(
        jobs=200, workers=3, batch=4, crash=0.5, restart_s=None, max_sim_s=600.0, seed=1,
    )
    assert not report.finished  # type: ignore[attr-defined]
    assert report.crashes == 3  # type: ignore[attr-defined]
    assert report.todo_left > 0  # type: ignore[attr-defined]
    assert report.sim_seconds == pytest.approx(600.0)  # type: ignore[attr-defined]


async def test_attempts_still_held_at_the_end_count_as_expired() -> None:
    # Leases run out long before the jobs end; the sweep exhausts every job while the workers
    # still hold their attempts, so the run ends (by the counts) with all attempts held.
    sim, report, jobs = await run(
        jobs=30, workers=3, batch=10, duration=Duration("const", 100.0), lease_s=3,
        renew=False, max_resets=0, sweep_interval_s=1.0, seed=1,
    )
    check_terminal_and_resets(sim.cfg, report, jobs)
    assert report.reset_exhausted == 30 and report.resets == 30  # type: ignore[attr-defined]
    assert report.sim_seconds < 10  # type: ignore[attr-defined]
