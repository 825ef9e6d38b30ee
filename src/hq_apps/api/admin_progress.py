"""GET /api/v1/admin/projects/{id}/progress: percent done, rate and ETA (issue 14).

A new route rather than new keys on GET project, whose key set official clients check.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.api.auth import admin_principal
from hq_apps.api.http import json_response
from hq_apps.api.openapi import RESOURCE_ERRORS, op
from hq_apps.api.wire_out import JobCountsOut, ProgressOut
from hq_domain.clock import Clock, seconds
from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.ids import is_id
from hq_domain.ports import Store
from hq_domain.progress import RATE_WINDOW_S, progress

_Req = Request[Any, Any, Any]


def progress_handlers(store: Store, clock: Clock) -> list[HTTPRouteHandler]:
    @get(
        "/api/v1/admin/projects/{project_id:str}/progress",
        **op("Project progress", ["admin: projects"], None, ProgressOut, errors=RESOURCE_ERRORS),
    )
    async def project_progress(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        if not is_id(project_id):
            raise InvalidRequest("invalid project ID")
        summary = await store.get_project(project_id)
        if summary is None:
            raise NotFound("project not found")
        now_s = seconds(clock.now_ns())
        points = await store.project_history(project_id, now_s - RATE_WINDOW_S)
        p = progress(points, summary.job_counts, now_s)
        c = summary.job_counts
        return json_response(
            ProgressOut(
                project_id=project_id,
                job_counts=JobCountsOut(c.todo, c.wip, c.done, c.failed, c.reset_exhausted),
                percent_done=None if p.percent_done is None else round(p.percent_done, 3),
                rate_per_minute=None if p.rate_per_minute is None else round(p.rate_per_minute, 3),
                eta_seconds=p.eta_seconds,
                history_minutes=len(points),
                resets_per_minute=(
                    None if p.resets_per_minute is None else round(p.resets_per_minute, 3)
                ),
            )
        )

    return [project_progress]
