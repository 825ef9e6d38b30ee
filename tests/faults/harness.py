"""Real ``tracker serve`` processes, seeding through the PostgreSQL store, and plain-httpx
workers that keep a ledger of everything the server told them.

The ledger is what the fault tests judge: which (job, attempt) pairs a claim handed out, which
mutations came back ``applied``, and which requests lost their response (transport error), so a
completion the client never saw confirmed can still be accounted for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from hq_adapters.postgres import connect
from hq_domain.clock import SystemClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role
from tests.unit.api.live import free_port

ADMIN_TOKEN = "faults-admin-token-0123456789"
WORKER_TOKEN = "faults-worker-token-0123456789"
VERSION = "faults/1"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WORKER = {"Authorization": f"Bearer {WORKER_TOKEN}", "X-SavewebHQ-Client-Version": VERSION}


class Tracker:
    """One ``tracker serve`` process on a fixed 127.0.0.1 port (restartable on that port)."""

    def __init__(self, dsn: str, log_dir: Path, name: str = "tracker", port: int | None = None):
        self.dsn = dsn
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_paths(self) -> list[Path]:
        return sorted(self.log_dir.glob(f"{self.name}-*.log"))

    def start(self, timeout: float = 30.0, extra_env: dict[str, str] | None = None) -> Tracker:
        return self.spawn(extra_env).wait_ready(timeout)

    def spawn(self, extra_env: dict[str, str] | None = None) -> Tracker:
        self.starts += 1
        log = open(self.log_dir / f"{self.name}-{self.starts}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hq_apps.cli.tracker", "serve",
             "--listen", f"127.0.0.1:{self.port}"],
            env={**os.environ, "HQ_DATABASE_URL": self.dsn, **(extra_env or {})},
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        return self

    def wait_ready(self, timeout: float = 30.0) -> Tracker:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"tracker exited: {self.output()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("tracker serve did not come up")
            time.sleep(0.05)

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def output(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self.log_paths)


async def seed(dsn: str, project: str, n_jobs: int, *, start: int = 0, **put: Any) -> None:
    """Users ``admin``/``worker`` with the known tokens, an active project, ``n_jobs`` jobs."""
    store = await connect(dsn, SystemClock(), min_size=1, max_size=2)
    try:
        await store.bootstrap_user("admin", [Role.ADMIN], ADMIN_TOKEN)
        await store.bootstrap_user("worker", [Role.WORKER], WORKER_TOKEN)
        fields: dict[str, Any] = {"client_versions": (VERSION,), "max_resets": 1000, **put}
        await store.put_project(project, ProjectPut(status="active", **fields))
        for lo in range(start, start + n_jobs, 1000):
            hi = min(start + n_jobs, lo + 1000)
            await store.enqueue(project, [JobSpec(f"v{i}", id=f"j{i}") for i in range(lo, hi)])
    finally:
        await store.close()


@dataclass
class Ledger:
    """Everything the workers observed; thread-safe via one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    claims: list[tuple[int, str, int, float]] = field(default_factory=list)
    applied: Counter[tuple[int, str]] = field(default_factory=Counter)
    stale: Counter[tuple[int, str]] = field(default_factory=Counter)
    lost: set[tuple[int, str]] = field(default_factory=set)
    """Attempts with a completion whose outcome the worker could not learn (transport error
    or 5xx); only these may have been applied without the worker seeing ``applied``."""
    transport_errors: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    dispatched_at: list[tuple[float, int]] = field(default_factory=list)

    def claimed(self, jobs: list[dict[str, Any]], at: float) -> None:
        with self.lock:
            for j in jobs:
                self.claims.append((j["job_id"], j["attempt_id"], j["lease_expires_at"], at))
            self.dispatched_at.append((at, len(jobs)))

    def results(self, items: list[dict[str, Any]]) -> None:
        with self.lock:
            for r in items:
                key = (r["job_id"], r["attempt_id"])
                if r["status"] == "applied":
                    self.applied[key] += 1
                else:
                    assert r["error"]["code"] == "stale_attempt", r
                    self.stale[key] += 1

    def applied_by_job(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = defaultdict(list)
        for (job, attempt), n in self.applied.items():
            out[job] += [attempt] * n
        return out


def _outcome(attempt_id: str) -> dict[str, Any]:
    return {"kind": "success", "code": 200, "uri": None, "meta": {"attempt": attempt_id}}


class Worker(threading.Thread):
    """Claim → complete loop over one or more tracker URLs, tolerating connection errors.

    A completion whose response was lost is retried with the identical body until the server
    answers (the retry must then be ``stale_attempt`` if the first one landed).
    """

    def __init__(
        self,
        urls: list[str],
        project: str,
        ledger: Ledger,
        stop: threading.Event,
        *,
        name: str,
        max_jobs: int = 8,
        lease_seconds: int = 5,
        complete: bool = True,
        pace_s: float = 0.0,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.urls = urls
        self.project = project
        self.ledger = ledger
        self.stop_event = stop
        self.max_jobs = max_jobs
        self.lease_seconds = lease_seconds
        self.do_complete = complete
        self.pace_s = pace_s
        self.turn = 0

    def _url(self) -> str:
        self.turn += 1
        return self.urls[self.turn % len(self.urls)]

    def _post(self, client: httpx.Client, op: str, body: dict[str, Any]) -> httpx.Response | None:
        try:
            r = client.post(
                f"{self._url()}/api/v1/projects/{self.project}/jobs/{op}",
                json=body, headers=WORKER, timeout=10,
            )  # fmt: skip
        except httpx.TransportError:
            with self.ledger.lock:
                self.ledger.transport_errors += 1
            return None
        with self.ledger.lock:
            self.ledger.statuses[r.status_code] += 1
        return r

    def run(self) -> None:
        with httpx.Client() as client:
            while not self.stop_event.is_set():
                body = {"worker_id": self.name, "max_jobs": self.max_jobs,
                        "lease_seconds": self.lease_seconds, "policy_version": 1}  # fmt: skip
                r = self._post(client, "claim", body)
                if r is None or r.status_code != 200:
                    delay = 0.05
                    if r is not None and r.status_code == 429:
                        delay = min(r.json()["error"]["retry_after_ms"] / 1000, 0.02)
                    time.sleep(delay)
                    continue
                jobs = r.json()["jobs"]
                self.ledger.claimed(jobs, time.monotonic())
                if not jobs:
                    time.sleep(0.05)
                    continue
                if self.pace_s:
                    time.sleep(self.pace_s)
                if self.do_complete:
                    self._complete(client, jobs)

    def _complete(self, client: httpx.Client, jobs: list[dict[str, Any]]) -> None:
        items = [
            {"job_id": j["job_id"], "attempt_id": j["attempt_id"],
             "outcome": _outcome(j["attempt_id"]), "artifact_receipts": None}
            for j in jobs
        ]  # fmt: skip
        body = {"worker_id": self.name, "items": items}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = self._post(client, "complete", body)
            if r is None:
                with self.ledger.lock:
                    self.ledger.lost.update((j["job_id"], j["attempt_id"]) for j in jobs)
                time.sleep(0.05)
                continue
            if r.status_code == 200:
                self.ledger.results(r.json()["results"])
                return
            # 5xx while the database is away: the commit may still have happened (its
            # acknowledgement was lost with the connection), so the outcome is unknown
            with self.ledger.lock:
                self.ledger.lost.update((j["job_id"], j["attempt_id"]) for j in jobs)
            time.sleep(0.05)  # same body again


def admin_get(url: str, path: str) -> dict[str, Any]:
    r = httpx.get(url + path, headers=ADMIN, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def counts(url: str, project: str) -> dict[str, int]:
    return admin_get(url, f"/api/v1/admin/projects/{project}")["job_counts"]


def wait_until(predicate: Any, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


async def job_rows(dsn: str, project: str) -> list[dict[str, Any]]:
    """Every job row in job_id order (value, status, reset_count, the attempt recorded in the
    stored outcome)."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT job_id, value, status, reset_count, outcome->'meta'->>'attempt' AS done_attempt, "
            "attempt_id FROM tracker_jobs WHERE project_id = $1 ORDER BY job_id",
            project,
        )
    finally:
        await conn.close()
    return [dict(r) for r in rows]


def assert_exactly_once(ledger: Ledger, rows: list[dict[str, Any]], n_jobs: int) -> int:
    """Every job done once by one attempt, no attempt applied twice; returns how many winning
    completions the workers never saw confirmed (each must have lost its response)."""
    twice = {key: n for key, n in ledger.applied.items() if n > 1}
    assert not twice, f"attempts applied more than once: {twice}"
    by_job = ledger.applied_by_job()
    multi = {job: attempts for job, attempts in by_job.items() if len(attempts) > 1}
    assert not multi, f"jobs completed by more than one attempt: {multi}"
    assert len(rows) == n_jobs
    unconfirmed = 0
    for row in rows:
        assert row["status"] == "done" and row["done_attempt"], row
        seen = by_job.get(row["job_id"])
        if seen:
            assert seen == [row["done_attempt"]], (row, seen)
        else:  # applied on the server, response lost
            unconfirmed += 1
            assert (row["job_id"], row["done_attempt"]) in ledger.lost, row
    claimed_attempts = {(job, attempt) for job, attempt, _, _ in ledger.claims}
    assert set(ledger.applied) <= claimed_attempts
    return unconfirmed
