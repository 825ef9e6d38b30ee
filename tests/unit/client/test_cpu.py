"""Client CPU per request (SDK + httpx, no network): printed with ``-s``, loosely bounded.

The mock tracker's own work is excluded by timing a transport that returns prebuilt bytes.
"""

from __future__ import annotations

import json
import time

import httpx

from hq_adapters.client import ProjectQueue
from tests.unit.client.conftest import CONFIG
from tests.unit.client.fakes import NO_STORE

N = 300


def _canned(worker_jobs: int) -> httpx.MockTransport:
    policy = json.dumps(
        {
            "project_id": "proj",
            "dispatch_qps": None,
            "worker_claim_qps": None,
            "max_jobs_per_claim": 256,
            "recommended_lease_seconds": 300,
            "policy_version": 1,
            "refresh_after_ms": 60000,
        }
    ).encode()
    jobs = [
        {
            "value": f"https://example.com/{i}",
            "type": "seed",
            "job_id": i,
            "attempt_id": f"at_{i:024d}",
            "lease_expires_at": 2_000_000_000,
        }
        for i in range(1, worker_jobs + 1)
    ]
    claim = json.dumps(
        {"project_id": "proj", "jobs": jobs, "retry_after_ms": 1000, "policy_version": 1}
    ).encode()
    result = json.dumps(
        {
            "results": [
                {
                    "job_id": 1,
                    "attempt_id": "at_1",
                    "status": "applied",
                    "job_status": "done",
                    "lease_expires_at": None,
                    "error": None,
                }
            ]
        }
    ).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = claim if path.endswith("/claim") else result if "/jobs/" in path else policy
        return httpx.Response(200, headers=NO_STORE, content=body)

    return httpx.MockTransport(handler)


def _cpu_per_call(fn) -> float:
    fn()  # warm up
    start = time.process_time()
    for _ in range(N):
        fn()
    return (time.process_time() - start) / N


def test_client_cpu_per_request():
    with ProjectQueue(CONFIG, "proj", transport=_canned(1), renew=False) as queue:
        item = [
            {
                "job_id": 1,
                "attempt_id": "at_1",
                "outcome": {"kind": "success"},
                "artifact_receipts": None,
            }
        ]
        complete = _cpu_per_call(lambda: queue.complete(item))
        claim_one = _cpu_per_call(lambda: queue.claim(1))
    with ProjectQueue(CONFIG, "proj", transport=_canned(256), renew=False) as queue:
        claim_256 = _cpu_per_call(lambda: queue.claim(256))
        handles_256 = _cpu_per_call(lambda: queue.claim_jobs(256))
    print(
        f"\nclient CPU per request: complete(1 item) {complete * 1e6:.0f} µs, "
        f"claim(1 job) {claim_one * 1e6:.0f} µs, claim(256 jobs) {claim_256 * 1e6:.0f} µs, "
        f"claim_jobs(256 handles) {handles_256 * 1e6:.0f} µs"
    )
    assert complete < 0.003 and claim_one < 0.003
    assert claim_256 < 0.02 and handles_256 < 0.03
