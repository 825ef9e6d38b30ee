"""The project dispatch token bucket (spec §2.5) as pure arithmetic.

Time is in nanoseconds. D8: the refill time never moves backwards, so a claim that read its
clock before waiting for the project lock cannot mint tokens another claim already spent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hq_domain.projects import MAX_CLAIM_JOBS

INT64_MAX = 2**63 - 1


def capacity(qps: float) -> float:
    """One job at ≤ 1000 QPS; otherwise ~100 ms of work, never more than one protocol batch."""
    if qps <= 1000:
        return 1.0
    return min(qps / 10.0, float(MAX_CLAIM_JOBS))


def refill(tokens: float | None, refilled_at_ns: int | None, now_ns: int, qps: float) -> float:
    """Tokens available at ``now_ns``; an unset bucket starts full."""
    cap = capacity(qps)
    if tokens is None or refilled_at_ns is None:
        return cap
    elapsed = max(0, now_ns - refilled_at_ns)
    return min(cap, tokens + elapsed * qps / 1e9)


def retry_after_ms(tokens: float, qps: float) -> int:
    """Milliseconds until one whole token exists: ``max(1, ceil((1 - tokens) * 1000 / qps))``."""
    wait = (1.0 - tokens) * 1000.0 / qps
    if not math.isfinite(wait) or wait >= INT64_MAX:
        return INT64_MAX
    return max(1, math.ceil(wait))


def whole_tokens(tokens: float) -> int:
    """How many jobs the bucket allows now (capped at one protocol batch)."""
    return MAX_CLAIM_JOBS if tokens >= MAX_CLAIM_JOBS else math.floor(tokens)


@dataclass(frozen=True, slots=True)
class BucketState:
    tokens: float
    refilled_at_ns: int


def after_claim(tokens: float, taken: int, refilled_at_ns: int | None, now_ns: int, qps: float) -> tuple[BucketState, int]:
    """Bucket to persist and ``retry_after_ms`` after a claim that took ``taken`` ≥ 1 jobs."""
    left = tokens - taken
    wait = 0 if left >= 1 else retry_after_ms(left, qps)
    return BucketState(left, advance_refill_time(refilled_at_ns, now_ns)), wait


def advance_refill_time(refilled_at_ns: int | None, now_ns: int) -> int:
    """The stored refill time moves forward only (D8)."""
    return now_ns if refilled_at_ns is None else max(refilled_at_ns, now_ns)
