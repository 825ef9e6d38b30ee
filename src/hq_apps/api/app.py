"""The composition root of the tracker HTTP server: ``create_app(settings, store, clock)``."""

from __future__ import annotations

from typing import Any

from litestar import Litestar, Request, Response, get
from litestar.handlers import HTTPRouteHandler

from hq_apps.api import framework_caches
from hq_apps.api.admin_progress import progress_handlers
from hq_apps.api.admin_projects import project_handlers
from hq_apps.api.admin_users import user_handlers
from hq_apps.api.auth import authenticate
from hq_apps.api.edge import GLOBAL_BODY_LIMIT, HqLitestar
from hq_apps.api.errors import EXCEPTION_HANDLERS
from hq_apps.api.fast_path import WorkerFastPath
from hq_apps.api.http import json_response
from hq_apps.api.openapi import op, openapi_config
from hq_apps.api.readiness import readiness_handler
from hq_apps.api.sweeper import history_lifespan, sweeper_lifespan
from hq_apps.api.wire_out import HealthOut, WhoamiOut
from hq_apps.api.worker_ops import WorkerOps
from hq_apps.api.worker_routes import worker_handlers
from hq_apps.settings import Settings
from hq_domain.clock import Clock, SystemClock
from hq_domain.ports import Store
from hq_domain.worker_tally import WorkerTally


def _common_handlers(store: Store) -> list[HTTPRouteHandler]:
    @get("/healthz", **op("Health check", ["meta"], None, HealthOut, auth=False, errors=(405,)))
    async def healthz() -> Response[bytes]:
        return json_response(HealthOut("ok"))

    @get("/api/v1/whoami", **op("Token owner", ["meta"], None, WhoamiOut))
    async def whoami(request: Request[Any, Any, Any]) -> Response[bytes]:
        principal = await authenticate(request, store)
        return json_response(WhoamiOut(principal.user_id))

    return [healthz, whoami, readiness_handler(store)]


def _source_upload_handlers(store: Store, clock: Clock) -> list[HTTPRouteHandler]:
    """Route 8, ``POST /api/v1/admin/projects/{p}/source`` (streamed source upload)."""
    from hq_apps.api.source_upload import source_handlers

    return source_handlers(store, clock)


def _lifespans(settings: Settings, store: Store, clock: Clock, tally: WorkerTally) -> list[Any]:
    history_s = settings.history_interval_s if settings.sweep_interval_s > 0 else 0
    out = [
        sweeper_lifespan(store, settings.sweep_interval_s, settings.sweep_batch),
        history_lifespan(store, history_s, tally=tally),
    ]
    if settings.metrics_listen is not None:
        from hq_apps.metrics.exporter import metrics_lifespan  # only with metrics enabled

        out.append(metrics_lifespan(settings.metrics_listen, store, clock))
    return out


def create_app(settings: Settings, store: Store, clock: Clock | None = None) -> Litestar:
    """Build the tracker app. ``store`` is owned by the caller (opened and closed outside)."""
    clock = clock or SystemClock()
    tally = WorkerTally()  # jobs done/failed per worker, flushed by the history loop
    ops = WorkerOps(store, tally)
    handlers: list[Any] = [
        *_common_handlers(store),
        *project_handlers(store),
        *progress_handlers(store, clock),
        *_source_upload_handlers(store, clock),
        *user_handlers(store),
        *worker_handlers(store, ops),
    ]
    if settings.web is not None:
        from hq_apps.web import web_handlers  # imported only when the dashboard is enabled

        handlers += web_handlers(settings.web, store, clock)
    framework_caches.install()
    app = HqLitestar(
        route_handlers=handlers,
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=openapi_config() if settings.openapi else None,
        lifespan=_lifespans(settings, store, clock, tally),
        request_max_body_size=GLOBAL_BODY_LIMIT,
        logging_config=None,
        debug=False,
    )
    framework_caches.bound_router(app)
    if settings.worker_fast_path:
        app.worker_fast_path = WorkerFastPath(ops)
    return app
