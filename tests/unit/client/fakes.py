"""A scripted tracker for ``httpx.MockTransport`` plus a fake clock shared with the SDK.

The tracker keeps just enough state (jobs with attempts and leases, whole-second deadlines) to
exercise renewal and lost detection; ``script`` lets a test queue canned responses per route.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

NO_STORE = {"Cache-Control": "no-store, no-cache, max-age=0", "Content-Type": "application/json"}


class FakeClock:
    """Monotonic seconds that move only when slept through or advanced."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Rng:
    """``U[0, 1)`` draws from a fixed list (cycled), recorded for assertions."""

    def __init__(self, *values: float) -> None:
        self.values = values or (0.5,)
        self.i = 0

    def __call__(self) -> float:
        value = self.values[self.i % len(self.values)]
        self.i += 1
        return value


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or NO_STORE, content=json.dumps(body).encode())


def error_response(
    status: int,
    code: str,
    message: str = "m",
    *,
    retryable: bool = False,
    retry_after_ms: int = 0,
    details: dict | None = None,
) -> httpx.Response:
    return json_response(
        status,
        {
            "error": {
                "code": code,
                "message": message,
                "retryable": retryable,
                "retry_after_ms": retry_after_ms,
                "details": details or {},
            }
        },
    )


@dataclass
class FakeJob:
    job_id: int
    value: str
    status: str = "todo"
    attempt_id: str | None = None
    worker_id: str | None = None
    lease_expires_at: int | None = None


@dataclass
class FakeTracker:
    clock: FakeClock
    project_id: str = "proj"
    policy_version: int = 1
    worker_claim_qps: float | None = None
    max_jobs_per_claim: int = 256
    recommended_lease_seconds: int = 300
    refresh_after_ms: int = 60_000
    jobs: dict[int, FakeJob] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    script: dict[str, deque[httpx.Response | Exception]] = field(default_factory=dict)
    hook: Callable[[str, dict], None] | None = None

    # -- setup --------------------------------------------------------------------------------
    def add_jobs(self, n: int) -> None:
        start = len(self.jobs) + 1
        for job_id in range(start, start + n):
            self.jobs[job_id] = FakeJob(job_id, f"https://example.com/{job_id}")

    def then(self, route: str, *responses: httpx.Response | Exception) -> None:
        self.script.setdefault(route, deque()).extend(responses)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def async_transport(self) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            return self.handle(request)

        return httpx.MockTransport(handler)

    # -- inspection ---------------------------------------------------------------------------
    def bodies(self, route: str) -> list[dict]:
        return [json.loads(r.content) for r in self.requests if _route(r) == route]

    def count(self, route: str) -> int:
        return sum(1 for r in self.requests if _route(r) == route)

    @property
    def now_s(self) -> int:
        return int(self.clock.now)

    # -- routes -------------------------------------------------------------------------------
    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = _route(request)
        queued = self.script.get(route)
        if queued:
            item = queued.popleft()
            if isinstance(item, Exception):
                raise item
            return item
        body = json.loads(request.content) if request.content else {}
        if self.hook is not None:
            self.hook(route, body)
        if route == "whoami":
            return json_response(200, {"user_id": "alice"})
        if route == "policy":
            return json_response(200, self.policy())
        if route == "claim":
            return json_response(200, self.claim(body))
        if route in ("complete", "fail", "extend-lease"):
            return json_response(
                200, {"results": [self.mutate(route, body, i) for i in body["items"]]}
            )
        return error_response(404, "not_found", "route not found")

    def policy(self) -> dict:
        return {
            "project_id": self.project_id,
            "dispatch_qps": None,
            "worker_claim_qps": self.worker_claim_qps,
            "max_jobs_per_claim": self.max_jobs_per_claim,
            "recommended_lease_seconds": self.recommended_lease_seconds,
            "policy_version": self.policy_version,
            "refresh_after_ms": self.refresh_after_ms,
        }

    def claim(self, body: dict) -> dict:
        now = self.now_s
        for job in self.jobs.values():  # expiry sweep
            if job.status == "wip" and job.lease_expires_at <= now:
                job.status, job.attempt_id, job.worker_id, job.lease_expires_at = (
                    "todo",
                    None,
                    None,
                    None,
                )
        out = []
        for job in self.jobs.values():
            if len(out) >= body["max_jobs"]:
                break
            if job.status == "todo":
                job.status, job.worker_id = "wip", body["worker_id"]
                job.attempt_id = "at_" + secrets.token_urlsafe(18)
                job.lease_expires_at = now + body["lease_seconds"]
                out.append(
                    {
                        "value": job.value,
                        "type": "seed",
                        "job_id": job.job_id,
                        "attempt_id": job.attempt_id,
                        "lease_expires_at": job.lease_expires_at,
                    }
                )
        return {
            "project_id": self.project_id,
            "jobs": out,
            "retry_after_ms": 1000,
            "policy_version": self.policy_version,
        }

    def mutate(self, route: str, body: dict, item: dict) -> dict:
        job = self.jobs.get(item["job_id"])
        now = self.now_s
        live = (
            job is not None
            and job.status == "wip"
            and job.attempt_id == item["attempt_id"]
            and job.worker_id == body["worker_id"]
            and job.lease_expires_at > now
        )
        if not live:
            return {
                "job_id": item["job_id"],
                "attempt_id": item["attempt_id"],
                "status": "rejected",
                "job_status": None,
                "lease_expires_at": None,
                "error": {
                    "code": "stale_attempt",
                    "message": "attempt is stale, expired, or already finalized",
                    "retryable": False,
                    "retry_after_ms": 0,
                    "details": None,
                },
            }
        lease = None
        if route == "extend-lease":
            lease = now + body["extend_seconds"]
            job.lease_expires_at = max(job.lease_expires_at, lease)
        else:
            job.status = (
                "done" if route == "complete" else ("todo" if item["retryable"] else "failed")
            )
            job.attempt_id = job.worker_id = job.lease_expires_at = None
        return {
            "job_id": job.job_id,
            "attempt_id": item["attempt_id"],
            "status": "applied",
            "job_status": job.status,
            "lease_expires_at": lease,
            "error": None,
        }


def _route(request: httpx.Request) -> str:
    path = request.url.path
    if path.endswith("/whoami"):
        return "whoami"
    if "/jobs/" in path:
        return path.rsplit("/", 1)[1]
    return "policy"


class WallClock(FakeClock):
    """Real time for the tracker side of tests that run the background renewer."""

    def __init__(self) -> None:
        super().__init__(0.0)

    @property  # type: ignore[override]
    def now(self) -> float:
        import time

        return time.time()

    @now.setter
    def now(self, value: float) -> None:
        pass
