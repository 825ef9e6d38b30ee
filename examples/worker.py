"""A complete SavewebHQ worker: claims jobs of one project, works on them, reports back.

    uv run tracker dev                                  # terminal 1 (prints the exports)
    export HQ_URL=http://127.0.0.1:8080 HQ_MACHINE_TOKEN_FILE=./data/admin.token
    uv run python examples/worker.py --project demo     # terminal 2, drains project demo

The project must exist and list this worker's client version (``--client-version``, default
``example-worker/1.0``) in its ``client_versions``; the README quick start creates it. The
"work" here only pretends to fetch each URL. Ctrl-C stops cleanly: jobs this worker holds go
back to the queue at once (a retryable failure) instead of waiting for their leases to expire.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import random
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from hq_adapters.client import (
    APIError,
    ClientUpgradeRequired,
    Config,
    Job,
    LeaseLost,
    NetworkError,
    SavewebHQError,
    open_project_queue,
    whoami,
)

DEFAULT_CLIENT_VERSION = "example-worker/1.0"
log = logging.getLogger("example-worker")


class Tally:
    """Thread-safe counters and a progress line at most every ``every`` seconds."""

    def __init__(self, every: float) -> None:
        self.completed = self.failed = self.lost = 0
        self.started = time.monotonic()
        self._every = every
        self._last = 0.0
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return (
            f"completed {self.completed}, failed {self.failed} (will be retried), "
            f"lost {self.lost} in {elapsed:.1f} s ({self.completed / elapsed:.1f} jobs/s)"
        )

    def maybe_print(self) -> None:
        now = time.monotonic()
        if now - self._last >= self._every:
            self._last = now
            log.info("%s", self.line())


def process(job: Job, fail_rate: float) -> dict[str, Any]:
    """The actual work. Here: pretend to fetch the URL; long work should poll the lease."""
    for _ in range(3):
        time.sleep(random.uniform(0.005, 0.02))
        job.raise_if_lost()  # stop early if another worker now owns this job
    if random.random() < fail_rate:
        raise RuntimeError("simulated transient failure")
    digest = hashlib.sha256(job.value.encode()).hexdigest()
    return {"kind": "success", "code": 200, "uri": job.value, "meta": {"sha256": digest}}


def work_on(job: Job, tally: Tally, fail_rate: float) -> None:
    try:
        job.complete(process(job, fail_rate))
        tally.add("completed")
    except LeaseLost:
        tally.add("lost")
        log.warning("lost job %s; another worker will redo it", job.job_id)
    except SavewebHQError:
        raise  # the tracker said no (e.g. project archived): stop the worker
    except Exception as error:  # the work failed: let HQ retry it (within max_resets)
        job.fail("worker_error", retryable=True, message=str(error)[:2048])
        tally.add("failed")


def release_held(queue: Any) -> int:
    """Give every job this worker still holds back to the queue now (retryable failures)."""
    held = queue.held_jobs()
    if not held:
        return 0
    items = [
        j.fail_item("worker_stopped", True, "worker interrupted before finishing") for j in held
    ]
    queue.fail_many(items)
    return len(held)


def run(config: Config, args: argparse.Namespace) -> Tally:
    """Claim and work until the project is drained (or forever); Ctrl-C returns held jobs.

    Ctrl-C only sets a flag (a KeyboardInterrupt raised at an arbitrary point of the main
    thread could land inside the client and be lost); the loop checks it between waits."""
    tally = Tally(args.progress_seconds)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        with (
            open_project_queue(config, args.project) as queue,
            ThreadPoolExecutor(args.concurrency, thread_name_prefix="job") as pool,
        ):
            log.info("worker %s on project %s at %s", queue.worker_id, args.project, args.url)
            while not stop.is_set():
                batch = queue.claim_jobs(max_jobs=args.batch, lease_seconds=60)
                if not batch.jobs:
                    if not args.forever:
                        return tally
                    stop.wait(batch.retry_after_ms / 1000 or 1.0)
                    continue
                pending = {pool.submit(work_on, job, tally, args.fail_rate) for job in batch}
                while pending and not stop.is_set():
                    done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
                    for future in done:
                        future.result()  # a job's unexpected error stops the worker
                    tally.maybe_print()
            pool.shutdown(wait=True, cancel_futures=True)
            returned = release_held(queue)
            log.info("interrupted: %s; %s held jobs returned to the queue", tally.line(), returned)
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Claim and finish the jobs of one SavewebHQ project (see the module doc)."
    )
    env = os.environ.get
    parser.add_argument(
        "--url", default=env("HQ_URL") or "http://127.0.0.1:8080",
        help="tracker URL (env HQ_URL; default http://127.0.0.1:8080, tracker dev)",
    )  # fmt: skip
    parser.add_argument(
        "--token-file", default=env("HQ_MACHINE_TOKEN_FILE") or "data/admin.token",
        help="file with a worker machine token (env HQ_MACHINE_TOKEN_FILE; default "
        "data/admin.token, written by tracker dev)",
    )  # fmt: skip
    parser.add_argument(
        "--project", default=env("HQ_PROJECT") or "demo",
        help="project to drain (env HQ_PROJECT; default demo)",
    )  # fmt: skip
    parser.add_argument(
        "--client-version", default=env("HQ_CLIENT_VERSION") or DEFAULT_CLIENT_VERSION,
        help="X-SavewebHQ-Client-Version to send; the project must list it "
        f"(default {DEFAULT_CLIENT_VERSION})",
    )  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=8, help="jobs worked on at once")
    parser.add_argument("--batch", type=int, default=64, help="jobs per claim (1-256)")
    parser.add_argument(
        "--fail-rate", type=float, default=0.0,
        help="fraction of jobs whose simulated work fails (retried by HQ); default 0",
    )  # fmt: skip
    parser.add_argument("--forever", action="store_true", help="keep polling when drained")
    parser.add_argument(
        "--progress-seconds", type=float, default=2.0, help="seconds between progress lines"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    try:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as error:
        log.error("cannot read the token file %s: %s", args.token_file, error.strerror)
        return 1
    config = Config(
        args.url, token, args.client_version, allow_http_tracker=args.url.startswith("http:")
    )
    try:
        log.info("authenticated as %s", whoami(config))
        tally = run(config, args)
    except KeyboardInterrupt:
        return 130
    except ClientUpgradeRequired as error:
        log.error(
            "project %s does not accept client version %r; it accepts %s (pass --client-version "
            "or add this one: hqctl projects put ... --client-versions)",
            args.project, args.client_version, error.client_versions,
        )  # fmt: skip
        return 1
    except APIError as error:
        log.error("the tracker refused: HTTP %s %s: %s", error.status, error.code, error.message)
        return 1
    except NetworkError as error:
        log.error("cannot reach the tracker at %s (%s); is it running?", args.url, error)
        return 1
    except SavewebHQError as error:
        log.error("stopped: %s", error)
        return 1
    log.info("queue drained: %s", tally.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
