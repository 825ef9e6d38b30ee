"""Admin job detail, requeue and delete (spec §5.4)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.web.context import FORM_LIMIT, Session, WebContext, page_session, post_session
from hq_apps.web.project_pages import PROJECT_NOT_FOUND
from hq_apps.web.render import error_page, page, redirect
from hq_domain.errors import HqError
from hq_domain.ids import is_id
from hq_domain.jobs import TERMINAL_REQUEUEABLE, Job, JobStatus
from hq_domain.users import Role

JOB_NOT_FOUND = "Job not found"


def _job_id(raw: str) -> int | None:
    if not raw.isdigit() or len(raw) > 19:
        return None
    value = int(raw)
    return value if 1 <= value < 2**63 else None


def spec_view(job: Job) -> dict[str, Any]:
    """The job's JobSpec output keys (spec §1.2.3), for display."""
    out: dict[str, Any] = {}
    if job.external_id:
        out["id"] = job.external_id
    out["value"] = job.value
    out["type"] = job.effective_type
    for key in ("via", "hops", "attr"):
        if key in job.spec:
            out[key] = job.spec[key]
    return out


async def job_page(
    web: WebContext, session: Session, project_id: str, raw_job_id: str, *,
    status: int = 200, error: str | None = None,
) -> Response[bytes]:
    ctx = {"user": session.user, "csrf": session.csrf}
    if not is_id(project_id) or await web.store.get_project(project_id) is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, **ctx)
    job_id = _job_id(raw_job_id)
    job = await web.store.get_job(project_id, job_id) if job_id else None
    if job is None:
        return error_page(web.env, 404, JOB_NOT_FOUND, **ctx)
    return page(
        web.env, "job.html", status=status, job=job, spec=spec_view(job), error=error,
        can_requeue=job.status in TERMINAL_REQUEUEABLE, can_delete=job.status is not JobStatus.WIP,
        **ctx,
    )


def job_page_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """Job detail, requeue and delete."""

    @get("/admin/projects/{project_id:str}/jobs/{job_id:str}")
    async def job_detail(
        request: Request, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        return await job_page(web, session, project_id, job_id)

    @post("/admin/projects/{project_id:str}/jobs/{job_id:str}/requeue", request_max_body_size=FORM_LIMIT)
    async def requeue_job(
        request: Request, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        jid = _job_id(job_id)
        if jid is None or not is_id(project_id):
            return await job_page(web, session, project_id, job_id)
        try:
            await web.store.requeue_job(project_id, jid)
        except HqError as exc:
            return await job_page(
                web, session, project_id, job_id, status=400, error=f"Requeue was rejected: {exc.message}"
            )
        return redirect(f"/admin/projects/{project_id}/jobs/{jid}")

    @post("/admin/projects/{project_id:str}/jobs/{job_id:str}/delete", request_max_body_size=FORM_LIMIT)
    async def delete_job(
        request: Request, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, _ = gate
        jid = _job_id(job_id)
        if jid is None or not is_id(project_id):
            return await job_page(web, session, project_id, job_id)
        try:
            await web.store.delete_job(project_id, jid)
        except HqError as exc:
            return await job_page(
                web, session, project_id, job_id, status=400, error=f"Delete was rejected: {exc.message}"
            )
        return redirect(f"/admin/projects/{project_id}")

    return [job_detail, requeue_job, delete_job]
