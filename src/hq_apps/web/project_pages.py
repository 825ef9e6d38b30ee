"""Admin project pages: list + create, detail + settings, delete, JSON enqueue (spec §5.4).

Source upload lives in :mod:`hq_apps.web.source_upload`, job pages in
:mod:`hq_apps.web.job_pages`.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency
from litestar.params import FromPath

from hq_apps.web import forms
from hq_apps.web.context import FORM_LIMIT, Session, WebContext, page_session, post_session
from hq_apps.web.progress_view import progress_context, projects_progress, refresh_seconds
from hq_apps.web.render import error_page, page, redirect
from hq_domain.errors import HqError
from hq_domain.ids import is_id
from hq_domain.jobs import ALL_STATUSES, JobStatus
from hq_domain.projects import ClaimOrder, IdentityMode, ProjectStatus, ProjectSummary
from hq_domain.users import Role

JOBS_PER_PAGE = 100
PROJECT_NOT_FOUND = "Project not found"
CHOICES = {
    "statuses": [s.value for s in ProjectStatus],
    "identity_modes": [m.value for m in IdentityMode],
    "claim_orders": [o.value for o in ClaimOrder],
    "job_statuses": [s.value for s in ALL_STATUSES],
}


def project_form_values(summary: ProjectSummary | None) -> dict[str, str]:
    """The settings form prefilled from a project (or the create defaults)."""
    if summary is None:
        return {
            "project_id": "", "status": "active", "identity_mode": "external_id",
            "claim_order": "fifo", "dispatch_qps": "", "worker_claim_qps": "",
            "max_jobs_per_claim": "256", "max_resets": "3", "recommended_lease_seconds": "300",
            "client_versions": "",
        }
    p = summary.project
    return {
        "project_id": p.id, "status": p.status.value, "identity_mode": p.identity_mode.value,
        "claim_order": p.claim_order.value,
        "dispatch_qps": "" if p.dispatch_qps is None else repr(p.dispatch_qps),
        "worker_claim_qps": "" if p.worker_claim_qps is None else repr(p.worker_claim_qps),
        "max_jobs_per_claim": str(p.max_jobs_per_claim), "max_resets": str(p.max_resets),
        "recommended_lease_seconds": str(p.recommended_lease_seconds),
        "client_versions": "\n".join(p.client_versions),
    }


def _submitted(form: FormMultiDict) -> dict[str, str]:
    return {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf"}


async def admin_home(
    web: WebContext, session: Session, *, status: int = 200, error: str | None = None,
    values: dict[str, str] | None = None,
) -> Response[bytes]:
    projects = await web.store.list_projects()
    return page(
        web.env, "admin.html", status=status, user=session.user, csrf=session.csrf,
        projects=projects, error=error,
        projects_progress=await projects_progress(web.store, projects, web.now()), form={**project_form_values(None), **(values or {})},
        **CHOICES,
    )


@get("/admin")
async def admin_index(request: Request, web: NamedDependency[WebContext]) -> Response[bytes]:
    session = await page_session(request, web, Role.ADMIN)
    if isinstance(session, Response):
        return session
    return await admin_home(web, session)


@post("/admin/projects", request_max_body_size=FORM_LIMIT)
async def create_project(request: Request, web: NamedDependency[WebContext]) -> Response[bytes]:
    gate = await post_session(request, web, Role.ADMIN)
    if isinstance(gate, Response):
        return gate
    session, form = gate
    project_id = forms.text(form, "project_id")
    try:
        existing = await web.store.get_project(project_id) if is_id(project_id) else None
        put = forms.project_put(
            form, project_id, existing and existing.project, web.now(), with_identity=True
        )
        try:
            await web.store.put_project(project_id, put)
        except HqError as exc:
            raise forms.FormError(f"{forms.UPDATE_REJECTED}: {exc.message}") from None
    except forms.FormError as exc:
        return await admin_home(
            web, session, status=400, error=exc.message, values=_submitted(form)
        )
    return redirect(f"/admin/projects/{project_id}")


def _parse_after(raw: str | None) -> int:
    try:
        return max(0, int(raw or "0"))
    except ValueError:
        return 0


async def project_page(
    request: Request, web: WebContext, session: Session, project_id: str, *,
    status: int = 200, error: str | None = None, extra: dict[str, Any] | None = None,
) -> Response[bytes]:
    summary = await web.store.get_project(project_id) if is_id(project_id) else None
    if summary is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    q = request.query_params
    after = _parse_after(q.get("after_job_id"))
    job_status = q.get("status")
    filt = JobStatus(job_status) if job_status in CHOICES["job_statuses"] else None
    jobs = await web.store.list_jobs(project_id, filt, after, JOBS_PER_PAGE)
    context: dict[str, Any] = {
        "form": project_form_values(summary), "jobs_json": "", **(extra or {}),
        **await progress_context(web.store, summary, web.now()),
        "refresh_s": refresh_seconds(q.get("refresh")),
    }
    return page(
        web.env, "project.html", status=status, user=session.user, csrf=session.csrf,
        summary=summary, jobs=jobs, after=after, job_filter=filt and filt.value, error=error,
        **context, **CHOICES,
    )


@get("/admin/projects/{project_id:str}")
async def project_detail(request: Request, web: NamedDependency[WebContext], project_id: FromPath[str]) -> Response[bytes]:
    session = await page_session(request, web, Role.ADMIN)
    if isinstance(session, Response):
        return session
    return await project_page(request, web, session, project_id)


@post("/admin/projects/{project_id:str}/status", request_max_body_size=FORM_LIMIT)
async def update_project(request: Request, web: NamedDependency[WebContext], project_id: FromPath[str]) -> Response[bytes]:
    gate = await post_session(request, web, Role.ADMIN)
    if isinstance(gate, Response):
        return gate
    session, form = gate
    existing = await web.store.get_project(project_id) if is_id(project_id) else None
    if existing is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    try:
        put = forms.project_put(form, project_id, existing.project, web.now(), with_identity=False)
        try:
            await web.store.put_project(project_id, put)
        except HqError as exc:
            raise forms.FormError(f"{forms.UPDATE_REJECTED}: {exc.message}") from None
    except forms.FormError as exc:
        values = {**project_form_values(existing), **_submitted(form)}
        return await project_page(
            request, web, session, project_id, status=400, error=exc.message,
            extra={"form": values},
        )
    return redirect(f"/admin/projects/{project_id}")


@post("/admin/projects/{project_id:str}/delete", request_max_body_size=FORM_LIMIT)
async def delete_project(request: Request, web: NamedDependency[WebContext], project_id: FromPath[str]) -> Response[bytes]:
    gate = await post_session(request, web, Role.ADMIN)
    if isinstance(gate, Response):
        return gate
    session, _ = gate
    if not is_id(project_id) or await web.store.get_project(project_id) is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    try:
        await web.store.delete_project(project_id)
    except HqError as exc:
        return await project_page(
            request, web, session, project_id, status=400,
            error=f"Project deletion was rejected: {exc.message}",
        )
    return redirect("/admin")


@post("/admin/projects/{project_id:str}/jobs", request_max_body_size=FORM_LIMIT)
async def enqueue_jobs(request: Request, web: NamedDependency[WebContext], project_id: FromPath[str]) -> Response[bytes]:
    gate = await post_session(request, web, Role.ADMIN)
    if isinstance(gate, Response):
        return gate
    session, form = gate
    if not is_id(project_id) or await web.store.get_project(project_id) is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    raw = form.get("jobs_json")
    raw = raw if isinstance(raw, str) else ""
    try:
        specs = forms.job_batch(raw)
        try:
            await web.store.enqueue(project_id, specs)
        except HqError as exc:
            raise forms.FormError(f"{forms.ENQUEUE_REJECTED}: {exc.message}") from None
    except forms.FormError as exc:
        return await project_page(
            request, web, session, project_id, status=400, error=exc.message,
            extra={"jobs_json": raw},
        )
    return redirect(f"/admin/projects/{project_id}")
