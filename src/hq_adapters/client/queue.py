"""Synchronous worker API: the reference SDK's ``ProjectQueue`` plus Go-SDK job handles."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from hq_adapters.client import flows
from hq_adapters.client.config import Config, parse_tracker_url
from hq_adapters.client.core import Clock, QueueCore, Random
from hq_adapters.client.flows import Call, Flow
from hq_adapters.client.http import SyncTransport
from hq_adapters.client.jobs import ClaimBatch, JobBase
from hq_adapters.client.wire import WHOAMI_PATH, user_id_of

log = logging.getLogger("hq_adapters.client")


class Job(JobBase):
    """A claimed attempt, renewed in the background until completed, failed, lost or released."""

    def __init__(
        self,
        queue: ProjectQueue,
        claimed: dict[str, Any],
        lease: int,
        started: float,
        on_lost: Callable[[Job], None] | None,
    ) -> None:
        super().__init__(claimed, lease, started, on_lost)
        self._queue = queue

    def _new_event(self) -> threading.Event:
        return threading.Event()

    def complete(
        self, outcome: Mapping[str, Any] | str, receipts: list[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Report success; raises ``LeaseLost`` if the tracker rejects the attempt."""
        item = self.complete_item(outcome, receipts)
        return self._queue._run(flows.finish_job(self._queue._core, self, "complete", item))

    def fail(
        self,
        error: Mapping[str, Any] | str,
        retryable: bool,
        message: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Report a failure (``retryable`` puts it back to ``todo`` within ``max_resets``)."""
        item = self.fail_item(error, retryable, message, details)
        return self._queue._run(flows.finish_job(self._queue._core, self, "fail", item))


class ProjectQueue:
    """One worker identity (``worker_id``) on one project; use as a context manager.

    Keyword-only extras: ``transport`` (an httpx transport, e.g. ``MockTransport``), ``clock``
    (monotonic seconds), ``sleep``, ``rng`` (``U[0, 1)``) and ``renew=False`` to drive lease
    renewal by hand with ``renew_now()`` instead of the background thread.
    """

    def __init__(
        self,
        config: Config,
        project_id: str,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: Random | None = None,
        renew: bool = True,
    ) -> None:
        self._core = QueueCore(config, project_id, clock=clock, rng=rng)
        self.project_id = project_id
        self.worker_id = self._core.worker_id
        self._http = SyncTransport(config, self._core.endpoint, transport)
        self._closed = threading.Event()
        self._sleep = sleep or self._closed.wait
        self._renew = renew
        self._renewer: threading.Thread | None = None
        self._wakeup = threading.Event()
        self._start_lock = threading.Lock()

    def __enter__(self) -> ProjectQueue:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _run(self, flow: Flow[Any]) -> Any:
        return flows.run_sync(flow, self._http.call, self._sleep)

    # -- the reference SDK's API ---------------------------------------------------------------
    def claim(
        self,
        max_jobs: int = 64,
        lease_seconds: int | None = None,
        accept_types: list[str] | None = None,
    ) -> dict[str, Any]:
        """Claim raw jobs (no handles, no renewal); only 429s are retried."""
        return self._run(flows.claim(self._core, max_jobs, lease_seconds, accept_types))

    def complete(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return self._run(flows.mutate(self._core, "complete", self._batch(items)))

    def fail(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return self._run(flows.mutate(self._core, "fail", self._batch(items)))

    def extend_lease(self, extend_seconds: int, items: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"worker_id": self.worker_id, "extend_seconds": extend_seconds, "items": items}
        return self._run(flows.mutate(self._core, "extend-lease", body))

    def _batch(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "items": items}

    # -- job handles ---------------------------------------------------------------------------
    def claim_jobs(
        self,
        max_jobs: int = 64,
        lease_seconds: int | None = None,
        accept_types: Sequence[str] | None = None,
        on_lost: Callable[[Job], None] | None = None,
    ) -> ClaimBatch[Job]:
        """Claim jobs as renewed handles. Network errors, 5xx and 429s are retried."""
        claimed = self._run(flows.claim_jobs(self._core, max_jobs, lease_seconds, accept_types))
        jobs = [
            Job(self, raw, claimed.lease_seconds, claimed.started, on_lost)
            for raw in claimed.response["jobs"]
        ]
        self._core.hold(jobs)
        if self._core.closed:
            self._core.release_all()
        elif jobs:
            self._ensure_renewer()
            self._wakeup.set()
        response = claimed.response
        return ClaimBatch(
            jobs, response.get("retry_after_ms", 0), response.get("policy_version", 0)
        )

    def complete_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Complete any number of items in ≤ 256-item requests; returns per-item results."""
        return self._run(flows.finish_many(self._core, "complete", items))

    def fail_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return self._run(flows.finish_many(self._core, "fail", items))

    def held_jobs(self) -> list[Job]:
        return self._core.held()  # type: ignore[return-value]

    def renew_now(self) -> None:
        """One renewal pass (what the background thread does every quarter lease)."""
        self._run(flows.renew_due(self._core))

    def close(self) -> None:
        """Stop renewing, release held jobs (their leases run out), close the connection."""
        if self._closed.is_set():
            return
        self._core.release_all()
        self._closed.set()
        self._wakeup.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5.0)
        self._http.close()

    # -- the renewer thread --------------------------------------------------------------------
    def _ensure_renewer(self) -> None:
        if not self._renew:
            return
        with self._start_lock:
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew_loop, name=f"hq-renew-{self.worker_id}", daemon=True
                )
                self._renewer.start()

    def _renew_loop(self) -> None:
        while True:
            self._wakeup.clear()
            if self._closed.is_set():
                return
            try:
                self.renew_now()
            except Exception:  # a bug must not stop renewals of the other jobs
                log.exception("lease renewal pass failed")
            wake = self._core.next_wakeup()
            self._wakeup.wait(None if wake is None else max(0.0, wake - self._core.clock()))


def open_project_queue(config: Config, project_id: str, **options: Any) -> ProjectQueue:
    return ProjectQueue(config, project_id, **options)


def whoami(config: Config, *, transport: httpx.BaseTransport | None = None) -> str:
    """The user ID owning the machine token (works for any valid token)."""
    config.validate()
    http = SyncTransport(
        config, parse_tracker_url(config.tracker_url, config.allow_http_tracker), transport
    )
    try:
        return user_id_of(http.call(Call("GET", WHOAMI_PATH)))
    finally:
        http.close()
