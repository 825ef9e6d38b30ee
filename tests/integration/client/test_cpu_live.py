"""Client CPU per request against a real tracker, measured with the worker thread's CPU clock
(the in-process server runs on another thread and is not counted). Printed with ``-s``."""

from __future__ import annotations

import time

from hq_adapters.client import open_project_queue
from tests.integration.client.harness import Admin


def test_client_cpu_per_request_live(config, admin: Admin, project):
    n = 200
    admin.enqueue(project, n)
    with open_project_queue(config, project) as queue:
        queue.claim_jobs(1)  # warm up: policy fetch, connection
        start = time.thread_time()
        jobs = [job for _ in range(n // 2 - 1) for job in queue.claim_jobs(1)]
        claim_cpu = (time.thread_time() - start) / len(jobs)
        start = time.thread_time()
        for job in jobs:
            job.complete("success")
        complete_cpu = (time.thread_time() - start) / len(jobs)
    print(
        f"\nlive client CPU per request: claim_jobs(1) {claim_cpu * 1e6:.0f} µs, "
        f"job.complete {complete_cpu * 1e6:.0f} µs"
    )
    assert claim_cpu < 0.005 and complete_cpu < 0.005
