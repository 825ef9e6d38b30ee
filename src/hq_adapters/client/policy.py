"""Project policy: validation, the refresh cache and claim pacing (spec §1.7.10, §6.2, §6.3).

Pure state machines with ``now`` passed in (monotonic seconds); a small lock keeps them
consistent when several threads share one queue (it is never held across I/O).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from hq_adapters.client.errors import ProtocolError
from hq_adapters.client.wire import is_int

# Python caps sleeps at threading.TIMEOUT_MAX; a qps of 1e-300 must not overflow it.
_MAX_INTERVAL = threading.TIMEOUT_MAX


@dataclass(frozen=True, slots=True)
class Policy:
    project_id: str
    dispatch_qps: float | None
    worker_claim_qps: float | None
    max_jobs_per_claim: int
    recommended_lease_seconds: int
    policy_version: int
    refresh_after_ms: int
    raw: dict[str, Any]


def valid_qps(value: object) -> bool:
    return value is None or (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def parse_policy(raw: dict[str, Any], project_id: str) -> Policy:
    """Check a policy response like both official SDKs do; raise ``ProtocolError`` otherwise."""
    ok = (
        raw.get("project_id") == project_id
        and is_int(raw.get("max_jobs_per_claim"))
        and 1 <= raw["max_jobs_per_claim"] <= 256
        and is_int(raw.get("recommended_lease_seconds"))
        and 1 <= raw["recommended_lease_seconds"] <= 3600
        and is_int(raw.get("policy_version"))
        and raw["policy_version"] >= 1
        and is_int(raw.get("refresh_after_ms"))
        and raw["refresh_after_ms"] >= 1
        and valid_qps(raw.get("dispatch_qps"))
        and valid_qps(raw.get("worker_claim_qps"))
    )
    if not ok:
        raise ProtocolError("tracker returned an invalid project policy")
    return Policy(
        project_id=project_id,
        dispatch_qps=raw.get("dispatch_qps"),
        worker_claim_qps=raw.get("worker_claim_qps"),
        max_jobs_per_claim=raw["max_jobs_per_claim"],
        recommended_lease_seconds=raw["recommended_lease_seconds"],
        policy_version=raw["policy_version"],
        refresh_after_ms=raw["refresh_after_ms"],
        raw=raw,
    )


class PolicyCache:
    """The cached policy, fresh until ``refresh_after_ms`` has passed since it was fetched."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._policy: Policy | None = None
        self._fetched_at = 0.0
        self._stale = False

    def current(self, now: float) -> Policy | None:
        """The policy if it may still be used, else ``None`` (fetch a new one)."""
        with self._lock:
            policy = self._policy
            if policy is None or self._stale:
                return None
            if now - self._fetched_at >= policy.refresh_after_ms / 1000:
                return None
            return policy

    def store(self, policy: Policy, now: float) -> bool:
        """Cache a fetched policy; True when its version differs from the previous one."""
        with self._lock:
            changed = (
                self._policy is not None and self._policy.policy_version != policy.policy_version
            )
            self._policy, self._fetched_at, self._stale = policy, now, False
            return changed

    def observe_version(self, version: object) -> None:
        """A claim answered with another ``policy_version``: refetch before the next claim."""
        with self._lock:
            if self._policy is not None and version != self._policy.policy_version:
                self._stale = True


class Pacer:
    """Client-side claim pacing for ``worker_claim_qps`` (spec §6.3).

    ``interval = 1/qps``; the first claim waits ``U[0, interval)``, later ones are scheduled at
    ``max(now, next) + U[0, interval/10)`` and push ``next`` to ``scheduled + interval``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: float | None = None

    def reserve(self, qps: float | None, now: float, u: float) -> float:
        """Reserve the next claim slot; returns how long to wait before sending (≥ 0)."""
        if qps is None:
            return 0.0
        interval = min(1 / qps, _MAX_INTERVAL)
        with self._lock:
            if self._next is None:
                scheduled = now + u * interval
            else:
                scheduled = max(now, self._next) + u * interval / 10
            self._next = scheduled + interval
        return max(0.0, scheduled - now)

    def reset(self) -> None:
        """A new policy version restarts pacing from a random first slot."""
        with self._lock:
            self._next = None
