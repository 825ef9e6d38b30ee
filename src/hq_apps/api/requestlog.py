"""Per-request context shared by the edge, the handlers and the request log line."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hq_apps import logging as hq_logging
from hq_apps.api import observers

SCOPE_KEY = "hq.request"
log = logging.getLogger("hq.api.request")


@dataclass(slots=True)
class RequestContext:
    request_id: str
    started: float
    status: int = 0
    user: str | None = None
    worker_id: str | None = None


def context(scope: Any) -> RequestContext | None:
    return scope.get(SCOPE_KEY)


def set_worker_id(scope: Any, worker_id: object) -> None:
    ctx = context(scope)
    if ctx is not None and isinstance(worker_id, str):
        ctx.worker_id = worker_id[:128]


def emit(scope: Any, ctx: RequestContext, latency_ms: float) -> None:
    observers.current.request(
        str(scope.get("method")), observers.route_of(scope), ctx.status, latency_ms / 1000
    )
    if not log.isEnabledFor(logging.INFO):
        return
    params = scope.get("path_params") or {}
    project = params.get("project_id")
    hq_logging.info_line(
        log,
        "request",
        {
            "request_id": ctx.request_id,
            "method": scope.get("method"),
            "route": scope.get("path_template") or scope.get("path"),
            "status": ctx.status,
            "latency_ms": round(latency_ms, 3),
            "project": project if isinstance(project, str) else None,
            "worker_id": ctx.worker_id,
            "user": ctx.user,
        },
    )
