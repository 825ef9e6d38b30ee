"""``GET /readyz``: readiness, i.e. "this process can serve a worker request right now".

``/healthz`` stays liveness-only (it never touches the store, so an orchestrator does not
restart a healthy process during a database outage); ``/readyz`` runs, with a short timeout,
the statement every worker request starts with (the PostgreSQL store's ``ping``: the token and
project gate, through the request pool and the same prepared or unnamed statement path) and
answers 503 with the standard error envelope when it fails or hangs, so a load balancer can
take the replica out of rotation until the database path works again. A trivial ``SELECT 1``
would not do: behind a misconfigured pooler it succeeds while every worker statement fails.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from hq_apps.api.errors import hq_error_response
from hq_apps.api.http import json_response
from hq_apps.api.openapi import op
from hq_apps.api.wire_out import HealthOut
from hq_domain.errors import InternalError
from hq_domain.ports import ObservePort

log = logging.getLogger("hq.api.readiness")

READY_TIMEOUT_S = 2.0


async def database_ready(store: ObservePort, timeout_s: float = READY_TIMEOUT_S) -> bool:
    """The store's ``ping(timeout_s)`` (PostgreSQL: a worker statement; memory: the store lock
    and a project read), abandoned after ``timeout_s``.

    Not ``asyncio.wait_for``: it waits for the cancelled probe to finish, and a cancelled
    asyncpg query first sends a cancel request over a new connection — against a database
    that has stopped answering that takes as long as the connect timeout (a minute).
    """
    probe = asyncio.ensure_future(store.ping(timeout_s))
    probe.add_done_callback(_retrieve)
    done, _ = await asyncio.wait({probe}, timeout=timeout_s)
    if not done:
        probe.cancel()
        log.warning("readiness probe timed out", extra={"fields": {"timeout_s": timeout_s}})
        return False
    if probe.exception() is not None:
        error = type(probe.exception()).__name__
        log.warning("readiness probe failed", extra={"fields": {"error": error}})
        return False
    return True


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark an abandoned probe's outcome as seen (no "exception never retrieved" noise)."""
    if not task.cancelled():
        task.exception()


def readiness_handler(store: ObservePort, timeout_s: float = READY_TIMEOUT_S) -> HTTPRouteHandler:
    """The ``/readyz`` route over ``store`` (mount it next to ``/healthz`` in ``create_app``)."""

    @get(
        "/readyz",
        **op(
            "Readiness (a worker statement succeeds on the database)",
            ["meta"],
            None,
            HealthOut,
            auth=False,
            errors=(405, 503),
        ),
    )
    async def readyz() -> Response[bytes]:
        if await database_ready(store, timeout_s):
            return json_response(HealthOut("ok"))
        return hq_error_response(
            InternalError("database unavailable", status=503, retryable=True, retry_after_ms=1000)
        )

    return readyz
