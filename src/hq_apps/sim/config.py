"""Simulation parameters and the job-duration distributions (seeded, reproducible)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Duration:
    """A job-duration distribution in seconds, written ``kind:a[,b]`` on the command line.

    ``const:S`` · ``uniform:LO,HI`` · ``exp:MEAN`` · ``lognormal:MEDIAN,SIGMA``.
    """

    kind: str
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Duration:
        kind, _, args = text.partition(":")
        try:
            nums = [float(x) for x in args.split(",")] if args else []
        except ValueError:
            raise ValueError(f"bad duration {text!r}") from None
        arity = {"const": 1, "uniform": 2, "exp": 1, "lognormal": 2}
        if kind not in arity or len(nums) != arity[kind]:
            raise ValueError(
                f"bad duration {text!r}: use const:S, uniform:LO,HI, exp:MEAN or "
                "lognormal:MEDIAN,SIGMA"
            )
        if any(not math.isfinite(x) or x < 0 for x in nums):
            raise ValueError(f"bad duration {text!r}: parameters must be finite and >= 0")
        if kind == "uniform" and nums[1] < nums[0]:
            raise ValueError(f"bad duration {text!r}: HI < LO")
        return cls(kind, nums[0], nums[1] if len(nums) > 1 else 0.0)

    def sampler(self, rng: random.Random) -> Callable[[], float]:
        a, b = self.a, self.b
        if self.kind == "const":
            return lambda: a
        if self.kind == "uniform":
            return lambda: rng.uniform(a, b)
        if self.kind == "exp":
            return (lambda: 0.0) if a == 0 else (lambda: rng.expovariate(1.0 / a))
        mu = math.log(a) if a > 0 else -math.inf
        return lambda: rng.lognormvariate(mu, b) if a > 0 else 0.0

    def __str__(self) -> str:
        if self.kind in ("const", "exp"):
            return f"{self.kind}:{self.a:g}"
        return f"{self.kind}:{self.a:g},{self.b:g}"


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Everything one run depends on; the same config and seed give the same result."""

    jobs: int = 10_000
    workers: int = 100
    duration: Duration = field(default_factory=lambda: Duration("exp", 10.0))
    fail_retryable: float = 0.0
    """Probability that an attempt fails with ``retryable: true``."""
    fail_permanent: float = 0.0
    """Probability that an attempt fails with ``retryable: false``."""
    crash: float = 0.0
    """Probability, per attempt, that the worker dies when the attempt would end, abandoning
    every job it holds (their leases then expire and are reset by a sweep or a claim)."""
    restart_s: float | None = 30.0
    """Seconds until a crashed worker comes back under a new worker_id; None = never."""
    lease_s: int = 300
    renew: bool = True
    """Extend held leases every lease/4 (as the Go SDK's renewal loop does)."""
    batch: int = 64
    """``max_jobs`` per claim (also the project's ``max_jobs_per_claim``)."""
    concurrency: int | None = None
    """Jobs a worker runs at once; it claims again when it has room for a full batch.
    None = ``batch`` (claim, run the batch, claim again)."""
    dispatch_qps: float | None = None
    worker_claim_qps: float | None = None
    max_resets: int = 3
    claim_order: str = "fifo"
    sweep_interval_s: float = 5.0
    sweep_batch: int = 1000
    monitor_interval_s: float = 1.0
    """How often the run checks the project's counts to detect the end (virtual seconds)."""
    max_sim_s: float = 7 * 86400.0
    """Stop even if jobs remain (e.g. every worker crashed with restarts disabled)."""
    enqueue_batch: int = 10_000
    seed: int = 1
    record_claims: bool = False
    """Keep every claim's (time, jobs) for invariant checks (tests); costs memory."""

    def __post_init__(self) -> None:
        probs = (self.fail_retryable, self.fail_permanent, self.crash)
        if any(not 0 <= p <= 1 for p in probs) or sum(probs) > 1:
            raise ValueError("failure and crash rates must be in [0, 1] and sum to <= 1")
        if self.jobs < 0 or self.workers < 1:
            raise ValueError("need jobs >= 0 and workers >= 1")
        if not 1 <= self.batch <= 256:
            raise ValueError("batch must be between 1 and 256")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if not 1 <= self.lease_s <= 3600:
            raise ValueError("lease must be between 1 and 3600 seconds")
        for qps in (self.dispatch_qps, self.worker_claim_qps):
            if qps is not None and not (math.isfinite(qps) and qps > 0):
                raise ValueError("QPS must be a positive finite number")
        if self.claim_order not in ("fifo", "random"):
            raise ValueError("claim order must be fifo or random")
        if self.sweep_interval_s < 0 or self.monitor_interval_s <= 0:
            raise ValueError("sweep interval must be >= 0 and monitor interval > 0")

    @property
    def slots(self) -> int:
        return self.concurrency or self.batch
