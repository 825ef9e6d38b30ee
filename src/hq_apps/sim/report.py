"""The result of one run: figures derived from the tallies, a human table and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hq_domain.projects import JobCounts

if TYPE_CHECKING:
    from hq_apps.sim.config import SimConfig
    from hq_apps.sim.engine import _Tally

NS = 1_000_000_000


@dataclass(slots=True)
class WorkerStats:
    requests: int = 0  # claim requests, including 429 retries
    paced_claims: int = 0  # SDK-level claim calls (each paced by worker_claim_qps)
    jobs: int = 0
    crashes: int = 0
    first_claim_ns: int | None = None
    last_claim_ns: int | None = None
    min_gap_ns: int | None = None  # shortest time between two paced claims of one worker

    def claim_rate(self) -> float | None:
        """Paced claims per second between this worker's first and last claim."""
        if self.first_claim_ns is None or self.last_claim_ns is None:
            return None
        span = self.last_claim_ns - self.first_claim_ns
        return None if span <= 0 else (self.paced_claims - 1) * NS / span


@dataclass(frozen=True, slots=True)
class SimReport:
    config: dict[str, Any]
    finished: bool
    sim_seconds: float
    jobs: int
    done: int
    failed: int
    reset_exhausted: int
    todo_left: int
    wip_left: int
    resets: int
    resets_by_failure: int
    resets_by_expiry: int
    crashes: int
    claim_requests: int
    paced_claims: int
    empty_claims: int
    rate_limited_429: int
    dispatched: int
    dispatch_rate: float | None
    dispatch_peak_1s: int
    dispatch_qps: float | None
    worker_claim_rate_mean: float | None
    worker_claim_rate_peak: float | None
    worker_claim_qps: float | None
    extend_requests: int
    swept_by_background: int
    events: int
    wall_setup_s: float
    wall_run_s: float
    cpu_s: float
    events_per_s: float

    @classmethod
    def build(
        cls,
        cfg: SimConfig,
        tally: _Tally,
        counts: JobCounts,
        workers: list[WorkerStats],
        *,
        finished: bool,
        sim_seconds: float,
        still_held: int,
        wall_setup_s: float,
        wall_run_s: float,
        cpu_s: float,
    ) -> SimReport:
        # Every attempt the fleet lost (crash, rejected renewal or completion, or still held
        # when the store says nothing is WIP) had its lease expire, and each expiry is a reset.
        by_expiry = tally.abandoned + tally.lease_lost + (still_held if finished else 0)
        by_failure = tally.retried + tally.exhausted_by_fail
        span = (
            None
            if tally.first_dispatch is None or tally.last_dispatch is None
            else (tally.last_dispatch - tally.first_dispatch) / NS
        )
        rates = [r for r in (w.claim_rate() for w in workers) if r is not None]
        gaps = [w.min_gap_ns for w in workers if w.min_gap_ns]
        config = {k: (str(v) if k == "duration" else v) for k, v in _config_dict(cfg).items()}
        return cls(
            config=config,
            finished=finished,
            sim_seconds=sim_seconds,
            jobs=cfg.jobs,
            done=counts.done,
            failed=counts.failed,
            reset_exhausted=counts.reset_exhausted,
            todo_left=counts.todo,
            wip_left=counts.wip,
            resets=by_failure + by_expiry,
            resets_by_failure=by_failure,
            resets_by_expiry=by_expiry,
            crashes=tally.crashes,
            claim_requests=tally.claim_requests,
            paced_claims=tally.paced_claims,
            empty_claims=tally.empty_claims,
            rate_limited_429=tally.rate_limited,
            dispatched=tally.dispatched,
            dispatch_rate=tally.dispatched / span if span else None,
            dispatch_peak_1s=max(tally.per_second.values(), default=0),
            dispatch_qps=cfg.dispatch_qps,
            worker_claim_rate_mean=sum(rates) / len(rates) if rates else None,
            worker_claim_rate_peak=NS / min(gaps) if gaps else None,
            worker_claim_qps=cfg.worker_claim_qps,
            extend_requests=tally.extends,
            swept_by_background=tally.swept,
            events=tally.events,
            wall_setup_s=wall_setup_s,
            wall_run_s=wall_run_s,
            cpu_s=cpu_s,
            events_per_s=tally.events / wall_run_s if wall_run_s > 0 else 0.0,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False)

    def table(self) -> str:
        def num(v: float | None, fmt: str = "{:,.1f}") -> str:
            return "-" if v is None else fmt.format(v)

        def limit(v: float | None) -> str:
            return "unlimited" if v is None else f"{v:,g}"

        c = self.config
        rows = [
            ("config", f"{self.jobs:,} jobs × {c['workers']:,} workers, duration {c['duration']}, "
             f"batch {c['batch']}, lease {c['lease_s']} s, seed {c['seed']}"),
            ("rates", f"fail retryable {c['fail_retryable']:g}, fail permanent "
             f"{c['fail_permanent']:g}, crash {c['crash']:g}, max_resets {c['max_resets']}"),
            ("finished", "yes" if self.finished else "NO (stopped at the time limit)"),
            ("simulated time", f"{self.sim_seconds:,.1f} s ({self.sim_seconds / 3600:,.2f} h)"),
            ("done / failed / exhausted", f"{self.done:,} / {self.failed:,} / "
             f"{self.reset_exhausted:,}"),
            ("left todo / wip", f"{self.todo_left:,} / {self.wip_left:,}"),
            ("resets (fail + expiry)", f"{self.resets:,} ({self.resets_by_failure:,} + "
             f"{self.resets_by_expiry:,})"),
            ("worker crashes", f"{self.crashes:,}"),
            ("claim requests", f"{self.claim_requests:,} ({self.paced_claims:,} paced, "
             f"{self.empty_claims:,} empty)"),
            ("429 responses", f"{self.rate_limited_429:,}"),
            ("dispatch rate", f"mean {num(self.dispatch_rate)} jobs/s, busiest second "
             f"{self.dispatch_peak_1s:,} (dispatch_qps {limit(self.dispatch_qps)})"),
            ("claims/s per worker", f"mean {num(self.worker_claim_rate_mean, '{:.3f}')}, "
             f"peak {num(self.worker_claim_rate_peak, '{:.3f}')} (worker_claim_qps "
             f"{limit(self.worker_claim_qps)})"),
            ("extend requests", f"{self.extend_requests:,}"),
            ("background sweep resets", f"{self.swept_by_background:,}"),
            ("wall time", f"setup {self.wall_setup_s:.1f} s + run {self.wall_run_s:.1f} s = "
             f"{self.wall_setup_s + self.wall_run_s:.1f} s (process CPU {self.cpu_s:.1f} s)"),
            ("events", f"{self.events:,} ({self.events_per_s:,.0f} events/s)"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _config_dict(cfg: SimConfig) -> dict[str, Any]:
    out = {name: getattr(cfg, name) for name in cfg.__dataclass_fields__}
    out.pop("record_claims", None)
    return out
