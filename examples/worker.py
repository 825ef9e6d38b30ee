"""A complete SavewebHQ worker, runnable against ``tracker dev``.

    uv run tracker dev                 # terminal 1: embedded PostgreSQL + API on :8080
    uv run python examples/worker.py   # terminal 2, same directory (reads ./data/admin.token)

``tracker dev`` creates the user ``dev-admin`` with both the admin and the worker role, so this
script first uses the admin API (plain httpx; the SDK is worker-only) to create the project
``example`` and enqueue a few URLs, then works through them with the SDK until none are left.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import time
from pathlib import Path
from typing import Any

import httpx

from hq_adapters.client import (
    APIError,
    ClientUpgradeRequired,
    Config,
    Job,
    LeaseLost,
    open_project_queue,
    whoami,
)

CLIENT_VERSION = "example-worker/1.0"
log = logging.getLogger("example-worker")


def set_up_project(url: str, token: str, project_id: str, jobs: int) -> None:
    """Create (or reset the policy of) the project and enqueue ``jobs`` URLs (deduplicated)."""
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    with admin:
        response = admin.put(
            f"/api/v1/admin/projects/{project_id}",
            json={
                "status": "active",
                "identity_mode": "unique_value",  # re-running does not duplicate jobs
                "client_versions": [CLIENT_VERSION],
                "worker_claim_qps": 5,  # the SDK paces this worker's claims
                "recommended_lease_seconds": 60,
            },
        )
        response.raise_for_status()
        if jobs:
            specs = [{"value": f"https://example.com/page/{i}"} for i in range(jobs)]
            response = admin.post(f"/api/v1/admin/projects/{project_id}/jobs", json={"jobs": specs})
            response.raise_for_status()
            log.info("enqueued %s, %s new", jobs, response.json()["inserted"])


def process(job: Job) -> dict[str, Any]:
    """The actual work. Here: pretend to fetch the URL; long work should poll the lease."""
    for _ in range(3):
        time.sleep(random.uniform(0.01, 0.05))
        job.raise_if_lost()  # stop early if another worker now owns this job
    if random.random() < 0.1:
        raise RuntimeError("simulated transient failure")
    digest = hashlib.sha256(job.value.encode()).hexdigest()
    return {"kind": "success", "code": 200, "uri": job.value, "meta": {"sha256": digest}}


def run(config: Config, project_id: str, forever: bool) -> int:
    done = 0
    with open_project_queue(config, project_id) as queue:
        log.info("worker %s on project %s", queue.worker_id, project_id)
        while True:
            batch = queue.claim_jobs(max_jobs=8, lease_seconds=30)
            if not batch.jobs:
                if not forever:
                    return done
                time.sleep(batch.retry_after_ms / 1000 or 1.0)
                continue
            for job in batch:
                try:
                    outcome = process(job)
                    job.complete(outcome)
                    done += 1
                except LeaseLost:
                    log.warning("lost job %s; another worker will redo it", job.job_id)
                except APIError:
                    raise  # tracker said no (e.g. project archived): stop the worker
                except Exception as error:  # the work failed: let HQ retry it
                    job.fail("worker_error", retryable=True, message=str(error)[:2048])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token-file", default="data/admin.token")
    parser.add_argument("--project", default="example")
    parser.add_argument("--enqueue", type=int, default=50, help="URLs to enqueue first (0: none)")
    parser.add_argument("--forever", action="store_true", help="keep polling when drained")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise

    token = Path(args.token_file).read_text(encoding="utf-8").strip()
    config = Config(args.url, token, CLIENT_VERSION, allow_http_tracker=True)
    log.info("authenticated as %s", whoami(config))
    set_up_project(args.url, token, args.project, args.enqueue)
    try:
        done = run(config, args.project, args.forever)
    except ClientUpgradeRequired as error:
        raise SystemExit(
            f"this worker is too old; the project accepts {error.client_versions}"
        ) from None
    log.info("queue drained: %s jobs completed by this worker", done)


if __name__ == "__main__":
    main()
