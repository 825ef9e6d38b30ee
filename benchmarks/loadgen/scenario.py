"""Worker scenarios: W concurrent workers loop claim(B) → complete until the queue drains.

The mixed variant also fails a share of the items retryably (they return to ``todo`` and are
claimed again) and extends the leases of a share of the batches before finishing them. After
the run the admin API must show every job ``done``, and the client must have seen exactly one
applied completion per job: no attempt was applied twice.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from benchmarks.loadgen import admin
from benchmarks.loadgen.http import HttpError
from benchmarks.loadgen.stats import CpuWatch, Latencies


class _Job(msgspec.Struct):
    job_id: int
    attempt_id: str


class _ClaimOut(msgspec.Struct):
    jobs: list[_Job]
    retry_after_ms: int = 0


class _Item(msgspec.Struct):
    job_id: int
    status: str


class _BatchOut(msgspec.Struct):
    results: list[_Item]


class _ErrorBody(msgspec.Struct):
    retry_after_ms: int = 0


class _ErrorOut(msgspec.Struct):
    error: _ErrorBody


CLAIM_DECODER = msgspec.json.Decoder(_ClaimOut)
BATCH_DECODER = msgspec.json.Decoder(_BatchOut)
_error_dec = msgspec.json.Decoder(_ErrorOut)
encode = msgspec.json.encode
OUTCOME = {"kind": "success", "code": 200, "uri": None, "meta": None}
_ERROR = {"code": "bench_retry", "message": "benchmark retryable failure", "details": None}


@dataclass(frozen=True, slots=True)
class Spec:
    batch: int
    workers: int
    jobs: int
    dispatch_qps: float | None = None
    fail_rate: float = 0.0
    extend_rate: float = 0.0
    lease_seconds: int = 300
    label: str = ""

    @property
    def name(self) -> str:
        base = self.label or "drain"
        qps = "" if self.dispatch_qps is None else f"-qps{self.dispatch_qps:g}"
        return f"{base}-b{self.batch}-w{self.workers}{qps}"


@dataclass
class _Shared:
    target: int
    completed: int = 0
    completed_ids: set[int] = field(default_factory=set)
    failed_applied: int = 0
    extended_applied: int = 0
    rejected: int = 0
    rate_limited: int = 0
    empty_claims: int = 0
    lat: Latencies = field(default_factory=Latencies)


async def _post(conn: Any, lat: Latencies, kind: str, path: str, body: bytes) -> tuple[int, bytes]:
    t0 = time.perf_counter()
    status, _, payload = await conn.request("POST", path, body)
    lat.add(kind if status == 200 else f"{kind}_{status}", time.perf_counter() - t0)
    return status, payload


async def _worker(
    index: int, target: admin.Target, spec: Spec, project: str, s: _Shared, rng: random.Random
) -> None:
    conn = target.connection(worker=True)
    worker_id = f"bench-w{index}"
    base = f"/api/v1/projects/{project}/jobs/"
    claim_body = encode(
        {
            "worker_id": worker_id,
            "max_jobs": spec.batch,
            "lease_seconds": spec.lease_seconds,
            "policy_version": 1,
        }
    )
    try:
        while s.completed < s.target:
            status, payload = await _post(conn, s.lat, "claim", base + "claim", claim_body)
            if status == 429:
                s.rate_limited += 1
                await asyncio.sleep(_error_dec.decode(payload).error.retry_after_ms / 1000)
                continue
            if status != 200:
                raise HttpError(status, payload)
            jobs = CLAIM_DECODER.decode(payload).jobs
            if not jobs:
                s.empty_claims += 1
                await asyncio.sleep(0.005)
                continue
            if spec.extend_rate and rng.random() < spec.extend_rate:
                await _extend(conn, s, base, worker_id, jobs)
            failing = [j for j in jobs if spec.fail_rate and rng.random() < spec.fail_rate]
            if failing:
                await _fail(conn, s, base, worker_id, failing)
                gone = {j.job_id for j in failing}
                jobs = [j for j in jobs if j.job_id not in gone]
            if jobs:
                await _complete(conn, s, base, worker_id, jobs)
    finally:
        await conn.close()


def _count(results: list[_Item], s: _Shared) -> list[_Item]:
    applied = [r for r in results if r.status == "applied"]
    s.rejected += len(results) - len(applied)
    return applied


async def _complete(conn: Any, s: _Shared, base: str, worker_id: str, jobs: list[_Job]) -> None:
    body = encode(
        {
            "worker_id": worker_id,
            "items": [
                {
                    "job_id": j.job_id,
                    "attempt_id": j.attempt_id,
                    "outcome": OUTCOME,
                    "artifact_receipts": None,
                }
                for j in jobs
            ],
        }
    )
    status, payload = await _post(conn, s.lat, "complete", base + "complete", body)
    if status != 200:
        raise HttpError(status, payload)
    for r in _count(BATCH_DECODER.decode(payload).results, s):
        if r.job_id in s.completed_ids:
            raise AssertionError(f"job {r.job_id} was completed twice")
        s.completed_ids.add(r.job_id)
        s.completed += 1


async def _fail(conn: Any, s: _Shared, base: str, worker_id: str, jobs: list[_Job]) -> None:
    body = encode(
        {
            "worker_id": worker_id,
            "items": [
                {"job_id": j.job_id, "attempt_id": j.attempt_id, "retryable": True, "error": _ERROR}
                for j in jobs
            ],
        }
    )
    status, payload = await _post(conn, s.lat, "fail", base + "fail", body)
    if status != 200:
        raise HttpError(status, payload)
    s.failed_applied += len(_count(BATCH_DECODER.decode(payload).results, s))


async def _extend(conn: Any, s: _Shared, base: str, worker_id: str, jobs: list[_Job]) -> None:
    body = encode(
        {
            "worker_id": worker_id,
            "extend_seconds": 600,
            "items": [{"job_id": j.job_id, "attempt_id": j.attempt_id} for j in jobs],
        }
    )
    status, payload = await _post(conn, s.lat, "extend", base + "extend-lease", body)
    if status != 200:
        raise HttpError(status, payload)
    s.extended_applied += len(_count(BATCH_DECODER.decode(payload).results, s))


async def run(
    target: admin.Target,
    spec: Spec,
    *,
    seed: int = 1,
    around_drain: Callable[[bool], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """Create a project, enqueue, drain with ``spec.workers`` workers, verify, delete it.

    ``around_drain(True)`` is awaited just before the drain starts and ``(False)`` right after
    it ends (the profiler uses it to leave setup and verification out)."""
    project = f"bench-{spec.name}-{int(time.time() * 1000) % 10**8}".replace(".", "_")
    aconn = target.connection()
    try:
        await admin.put_project(
            aconn, project, dispatch_qps=spec.dispatch_qps, max_resets=1000 if spec.fail_rate else 3
        )
        enqueue_s = await admin.enqueue(aconn, project, spec.jobs)
        shared = _Shared(target=spec.jobs)
        rng = random.Random(seed)
        if around_drain is not None:
            await around_drain(True)
        watch = CpuWatch(target.server_pid)
        await asyncio.gather(
            *(
                _worker(i, target, spec, project, shared, random.Random(rng.random()))
                for i in range(spec.workers)
            )
        )
        cpu = watch.stop()
        if around_drain is not None:
            await around_drain(False)
        counts = await admin.job_counts(aconn, project)
        problems = _verify(spec, counts, shared)
        if not problems:
            await admin.delete_project(aconn, project)
    finally:
        await aconn.close()
    wall = cpu["wall_s"] or 1e-9
    requests = shared.lat.requests
    return {
        "name": spec.name,
        "batch": spec.batch,
        "workers": spec.workers,
        "jobs": spec.jobs,
        "dispatch_qps": spec.dispatch_qps,
        "fail_rate": spec.fail_rate,
        "extend_rate": spec.extend_rate,
        "label": spec.label or "drain",
        "enqueue_s": enqueue_s,
        "enqueue_jobs_per_s": spec.jobs / enqueue_s,
        **cpu,
        "jobs_per_s": spec.jobs / wall,
        "requests": requests,
        "requests_per_s": requests / wall,
        "client_cpu_us_per_request": 1e6 * cpu["client_cpu_s"] / max(1, requests),
        "latency_ms": shared.lat.summary_ms(),
        "rate_limited": shared.rate_limited,
        "empty_claims": shared.empty_claims,
        "failed_applied": shared.failed_applied,
        "extended_applied": shared.extended_applied,
        "rejected": shared.rejected,
        "counts": counts,
        "problems": problems,
        "ok": not problems,
    }


def _verify(spec: Spec, counts: dict[str, int], s: _Shared) -> list[str]:
    problems = []
    expected = {"todo": 0, "wip": 0, "done": spec.jobs, "failed": 0, "reset_exhausted": 0}
    if counts != expected:
        problems.append(f"job_counts {counts} != {expected}")
    if s.completed != spec.jobs or len(s.completed_ids) != spec.jobs:
        problems.append(
            f"{s.completed} applied completions for {len(s.completed_ids)} distinct "
            f"jobs, expected {spec.jobs}"
        )
    if s.rejected and not spec.fail_rate and not spec.extend_rate:
        problems.append(f"{s.rejected} items rejected as stale")
    return problems
