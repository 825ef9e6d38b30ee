"""``python -m hq_apps.sim``: run one simulation and print a table (or ``--json``)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from hq_apps.sim.config import Duration, SimConfig
from hq_apps.sim.engine import Simulation


def _qps(text: str) -> float | None:
    return None if text.lower() in ("", "none", "unlimited") else float(text)


def parse_args(argv: list[str] | None = None) -> tuple[SimConfig, bool]:
    d = SimConfig()
    p = argparse.ArgumentParser(prog="python -m hq_apps.sim", description=__doc__)
    a = p.add_argument
    a("--jobs", type=int, default=d.jobs)
    a("--workers", type=int, default=d.workers)
    a("--duration", type=Duration.parse, default=d.duration,
      help="job duration: const:S | uniform:LO,HI | exp:MEAN | lognormal:MEDIAN,SIGMA "
           "(default %(default)s)")
    a("--fail-retryable", type=float, default=d.fail_retryable, help="P(attempt fails, retryable)")
    a("--fail-permanent", type=float, default=d.fail_permanent, help="P(attempt fails, final)")
    a("--crash", type=float, default=d.crash,
      help="P(worker dies at the end of an attempt, abandoning every job it holds)")
    a("--restart", type=float, default=d.restart_s,
      help="seconds until a crashed worker returns; negative = never (default %(default)s)")
    a("--lease", type=int, default=d.lease_s, help="lease seconds (default %(default)s)")
    a("--no-renew", action="store_true", help="do not extend leases at lease/4")
    a("--batch", type=int, default=d.batch, help="max_jobs per claim (default %(default)s)")
    a("--concurrency", type=int, default=None, help="jobs a worker runs at once (default: batch)")
    a("--dispatch-qps", type=_qps, default=None, help="project dispatch_qps (default unlimited)")
    a("--worker-claim-qps", type=_qps, default=None,
      help="project worker_claim_qps, paced as the SDKs do (default unlimited)")
    a("--max-resets", type=int, default=d.max_resets)
    a("--claim-order", choices=("fifo", "random"), default=d.claim_order)
    a("--sweep-interval", type=float, default=d.sweep_interval_s,
      help="background lease sweep period, 0 = off (default %(default)s)")
    a("--sweep-batch", type=int, default=d.sweep_batch)
    a("--max-sim-time", type=float, default=d.max_sim_s, help="stop after this many seconds")
    a("--seed", type=int, default=d.seed)
    a("--json", action="store_true", help="print the report as JSON")
    ns = p.parse_args(argv)
    try:
        cfg = SimConfig(
            jobs=ns.jobs,
            workers=ns.workers,
            duration=ns.duration,
            fail_retryable=ns.fail_retryable,
            fail_permanent=ns.fail_permanent,
            crash=ns.crash,
            restart_s=None if ns.restart is None or ns.restart < 0 else ns.restart,
            lease_s=ns.lease,
            renew=not ns.no_renew,
            batch=ns.batch,
            concurrency=ns.concurrency,
            dispatch_qps=ns.dispatch_qps,
            worker_claim_qps=ns.worker_claim_qps,
            max_resets=ns.max_resets,
            claim_order=ns.claim_order,
            sweep_interval_s=ns.sweep_interval,
            sweep_batch=ns.sweep_batch,
            max_sim_s=ns.max_sim_time,
            seed=ns.seed,
        )
    except ValueError as exc:
        p.error(str(exc))
    return cfg, ns.json


def main(argv: list[str] | None = None) -> int:
    cfg, as_json = parse_args(argv)
    report = asyncio.run(Simulation(cfg).run())
    print(report.to_json() if as_json else report.table())
    return 0 if report.finished else 1


if __name__ == "__main__":
    sys.exit(main())
