"""Claim→complete throughput over HTTP at batch 64 (not a test; run by hand).

    python -m tests.integration.api.throughput URL ADMIN_TOKEN [--jobs N] [--workers K]

Creates project ``bench-<random>``, enqueues N jobs, then K concurrent wire-protocol workers
(httpx, keep-alive) loop claim(64) → complete(64) until the queue is empty. Prints jobs/s
measured from the first claim to the last completion (enqueue time excluded).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time

import httpx


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    project = "bench-" + secrets.token_hex(4)
    auth = {"Authorization": f"Bearer {args.token}"}
    limits = httpx.Limits(max_connections=args.workers + 2)
    async with httpx.AsyncClient(
        base_url=args.url, headers=auth, timeout=60, limits=limits
    ) as http:
        r = await http.put(f"/api/v1/admin/projects/{project}",
                           json={"status": "active", "identity_mode": "none", "client_versions": ["bench"]})  # fmt: skip
        r.raise_for_status()
        for start in range(0, args.jobs, 5000):
            n = min(5000, args.jobs - start)
            jobs = [{"value": f"https://example.org/{start + i}"} for i in range(n)]
            (
                await http.post(f"/api/v1/admin/projects/{project}/jobs", json={"jobs": jobs})
            ).raise_for_status()

        headers = {"X-SavewebHQ-Client-Version": "bench"}
        done = 0
        requests = 0

        async def worker(k: int) -> None:
            nonlocal done, requests
            body = {
                "worker_id": f"bench{k}",
                "max_jobs": args.batch,
                "lease_seconds": 300,
                "policy_version": 1,
            }
            while True:
                r = await http.post(
                    f"/api/v1/projects/{project}/jobs/claim", json=body, headers=headers
                )
                r.raise_for_status()
                jobs = r.json()["jobs"]
                requests += 1
                if not jobs:
                    return
                items = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"], "outcome": {"kind": "success"}}
                         for j in jobs]  # fmt: skip
                r = await http.post(f"/api/v1/projects/{project}/jobs/complete",
                                    json={"worker_id": f"bench{k}", "items": items}, headers=headers)  # fmt: skip
                r.raise_for_status()
                requests += 1
                done += len(items)

        started = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(args.workers)))
        elapsed = time.perf_counter() - started
        print(f"{done} jobs claimed+completed in {elapsed:.2f}s = {done / elapsed:.0f} jobs/s "
              f"({requests / elapsed:.0f} req/s, batch {args.batch}, {args.workers} workers)")  # fmt: skip
        await http.delete(f"/api/v1/admin/projects/{project}")


if __name__ == "__main__":
    asyncio.run(main())
