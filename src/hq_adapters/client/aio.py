"""asyncio worker API: the same queue as ``queue.py`` with an async renewer task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx
import sniffio

from hq_adapters.client import flows
from hq_adapters.client.config import Config, parse_tracker_url
from hq_adapters.client.core import Clock, QueueCore, Random
from hq_adapters.client.flows import Call, Flow
from hq_adapters.client.http import AsyncTransport
from hq_adapters.client.jobs import ClaimBatch, JobBase
from hq_adapters.client.wire import WHOAMI_PATH, user_id_of

log = logging.getLogger("hq_adapters.client")


class AsyncJob(JobBase):
    """A claimed attempt held by an ``AsyncProjectQueue``; ``lost_event`` is an asyncio.Event."""

    def __init__(
        self,
        queue: AsyncProjectQueue,
        claimed: dict[str, Any],
        lease: int,
        started: float,
        on_lost: Callable[[AsyncJob], None] | None,
    ) -> None:
        super().__init__(claimed, lease, started, on_lost)
        self._queue = queue

    def _new_event(self) -> asyncio.Event:
        return asyncio.Event()

    async def complete(
        self, outcome: Mapping[str, Any] | str, receipts: list[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        item = self.complete_item(outcome, receipts)
        return await self._queue._run(flows.finish_job(self._queue._core, self, "complete", item))

    async def fail(
        self,
        error: Mapping[str, Any] | str,
        retryable: bool,
        message: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        item = self.fail_item(error, retryable, message, details)
        return await self._queue._run(flows.finish_job(self._queue._core, self, "fail", item))


class AsyncProjectQueue:
    """``ProjectQueue`` for asyncio (``async with``); same options, ``sleep`` is a coroutine."""

    def __init__(
        self,
        config: Config,
        project_id: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        rng: Random | None = None,
        renew: bool = True,
    ) -> None:
        self._core = QueueCore(config, project_id, clock=clock, rng=rng)
        self.project_id = project_id
        self.worker_id = self._core.worker_id
        self._http = AsyncTransport(config, self._core.endpoint, transport)
        self._closed = asyncio.Event()
        self._sleep = sleep or self._interruptible_sleep
        self._renew = renew
        self._renewer: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()

    async def __aenter__(self) -> AsyncProjectQueue:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _interruptible_sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closed.wait(), seconds)

    def _run(self, flow: Flow[Any]) -> Awaitable[Any]:
        return flows.run_async(flow, self._http.call, self._sleep)

    # -- the reference SDK's API, awaitable ----------------------------------------------------
    async def claim(
        self,
        max_jobs: int = 64,
        lease_seconds: int | None = None,
        accept_types: list[str] | None = None,
    ) -> dict[str, Any]:
        return await self._run(flows.claim(self._core, max_jobs, lease_seconds, accept_types))

    async def complete(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"worker_id": self.worker_id, "items": items}
        return await self._run(flows.mutate(self._core, "complete", body))

    async def fail(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"worker_id": self.worker_id, "items": items}
        return await self._run(flows.mutate(self._core, "fail", body))

    async def extend_lease(
        self, extend_seconds: int, items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body = {"worker_id": self.worker_id, "extend_seconds": extend_seconds, "items": items}
        return await self._run(flows.mutate(self._core, "extend-lease", body))

    # -- job handles ---------------------------------------------------------------------------
    async def claim_jobs(
        self,
        max_jobs: int = 64,
        lease_seconds: int | None = None,
        accept_types: Sequence[str] | None = None,
        on_lost: Callable[[AsyncJob], None] | None = None,
    ) -> ClaimBatch[AsyncJob]:
        claimed = await self._run(
            flows.claim_jobs(self._core, max_jobs, lease_seconds, accept_types)
        )
        jobs = [
            AsyncJob(self, raw, claimed.lease_seconds, claimed.started, on_lost)
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

    async def complete_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return await self._run(flows.finish_many(self._core, "complete", items))

    async def fail_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return await self._run(flows.finish_many(self._core, "fail", items))

    def held_jobs(self) -> list[AsyncJob]:
        return self._core.held()  # type: ignore[return-value]

    async def renew_now(self) -> None:
        await self._run(flows.renew_due(self._core))

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._core.release_all()
        self._closed.set()
        self._wakeup.set()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        await self._http.aclose()

    # -- the renewer task ----------------------------------------------------------------------
    def _ensure_renewer(self) -> None:
        if sniffio.current_async_library() != "asyncio":
            raise RuntimeError("AsyncProjectQueue job handles need an asyncio event loop")
        if self._renew and self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_loop(), name=f"hq-renew-{self.worker_id}"
            )

    async def _renew_loop(self) -> None:
        while not self._closed.is_set():
            self._wakeup.clear()
            try:
                await self.renew_now()
            except Exception:
                log.exception("lease renewal pass failed")
            wake = self._core.next_wakeup()
            timeout = None if wake is None else max(0.0, wake - self._core.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)


def open_async_project_queue(config: Config, project_id: str, **options: Any) -> AsyncProjectQueue:
    return AsyncProjectQueue(config, project_id, **options)


async def async_whoami(config: Config, *, transport: httpx.AsyncBaseTransport | None = None) -> str:
    config.validate()
    endpoint = parse_tracker_url(config.tracker_url, config.allow_http_tracker)
    http = AsyncTransport(config, endpoint, transport)
    try:
        return user_id_of(await http.call(Call("GET", WHOAMI_PATH)))
    finally:
        await http.aclose()
