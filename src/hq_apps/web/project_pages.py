"""Admin project pages: list + create, detail + settings, delete, JSON enqueue (spec §5.4).

Source upload lives in :mod:`hq_apps.web.source_upload`, job pages in
:mod:`hq_apps.web.job_pages`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from litestar import Request, Response, get, post
from litestar.datastructures import Cookie, FormMultiDict
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.web import forms
from hq_apps.web.context import FORM_LIMIT, Session, WebContext, page_session, post_session
from hq_apps.web.job_lines import parse_enqueue_box
from hq_apps.web.progress_view import progress_context, projects_progress, refresh_seconds
from hq_apps.web.render import error_page, page, redirect
from hq_domain.errors import HqError
from hq_domain.ids import is_id
from hq_domain.jobs import ALL_STATUSES, JobStatus
from hq_domain.projects import (
    ClaimOrder,
    IdentityMode,
    Project,
    ProjectPut,
    ProjectStatus,
    ProjectSummary,
    apply_put,
)
from hq_domain.users import Role

JOBS_PER_PAGE = 100
FLASH_COOKIE = "saveweb_hq_flash"
PROJECT_NOT_FOUND = "Project not found"
_NEW_PROJECT_ID = "new"
CHOICES = {
    "statuses": [s.value for s in ProjectStatus],
    "identity_modes": [m.value for m in IdentityMode],
    "claim_orders": [o.value for o in ClaimOrder],
    "job_statuses": [s.value for s in ALL_STATUSES],
}


def project_form_values(summary: ProjectSummary | None) -> dict[str, str]:
    """The settings form prefilled from a project (or the create defaults)."""
    if summary is None:  # what the domain gives a project created with every field omitted
        new = apply_put(_NEW_PROJECT_ID, None, ProjectPut(ProjectStatus.ACTIVE), 0)
        return {**_form_values(new), "project_id": ""}
    return _form_values(summary.project)


def _form_values(p: Project) -> dict[str, str]:
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
    values: dict[str, str] | None = None, request: Request | None = None,
) -> Response[bytes]:
    projects = await web.store.list_projects()
    notice, cookies = take_flash(request) if request is not None else (None, [])
    return page(
        web.env, "admin.html", status=status, user=session.user, csrf=session.csrf,
        projects=projects, error=error, form={**project_form_values(None), **(values or {})},
        projects_progress=await projects_progress(web.store, projects, web.now()),
        notice=notice, cookies=cookies, **CHOICES,
    )


def _parse_after(raw: str | None) -> int:
    try:
        return max(0, int(raw or "0"))
    except ValueError:
        return 0


MAX_BACK = 50  # cursors remembered for "Previous" (then only "First page")


def _parse_back(raw: str | None) -> list[int]:
    """The cursors of the pages before this one, oldest first (``back=0,100,200``)."""
    out = []
    for part in (raw or "").split(",")[-MAX_BACK:]:
        if part.isdigit() and len(part) <= 19:
            out.append(int(part))
    return out


def _page_url(project_id: str, after: int, back: list[int], status: str | None) -> str:
    """Keyset pages only know "after job N"; the cursors behind us ride in ``back`` so
    "Previous" needs no backwards query."""
    query = []
    if after:
        query.append(f"after_job_id={after}")
    if back:
        query.append("back=" + ",".join(str(b) for b in back[-MAX_BACK:]))
    if status:
        query.append(f"status={status}")
    return f"/admin/projects/{project_id}" + ("?" + "&".join(query) if query else "")


def pager(project_id: str, after: int, back: list[int], status: str | None,
          next_after: int | None) -> dict[str, str | None]:  # fmt: skip
    """First / Previous / Next links of the jobs table (None where there is no such page)."""
    prev = None
    if after:
        prev_after = back[-1] if back else 0
        prev = _page_url(project_id, prev_after, back[:-1], status)
    return {
        "first": _page_url(project_id, 0, [], status) if after else None,
        "prev": prev,
        "next": _page_url(project_id, next_after, [*back, after], status) if next_after else None,
    }


def flash_cookie(message: str, secure: bool) -> Cookie:
    """A one-shot message for the next ``/admin`` page (the redirect target stays the spec's
    plain ``/admin``). HttpOnly, 60 s; shown escaped, so a forged one can only show text."""
    return Cookie(key=FLASH_COOKIE, value=quote(message[:200]), path="/admin", max_age=60,
                  httponly=True, samesite="lax", secure=secure)  # fmt: skip


def take_flash(request: Request) -> tuple[str | None, list[Cookie]]:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None, []
    gone = Cookie(key=FLASH_COOKIE, value="", path="/admin", max_age=0, httponly=True,
                  samesite="lax")  # fmt: skip
    return unquote(raw)[:200], [gone]


async def project_page(
    request: Request, web: WebContext, session: Session, project_id: str, *,
    status: int = 200, error: str | None = None, extra: dict[str, Any] | None = None,
) -> Response[bytes]:
    summary = await web.store.get_project(project_id) if is_id(project_id) else None
    if summary is None:
        return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
    q = request.query_params
    after = _parse_after(q.get("after_job_id"))
    back = [b for b in _parse_back(q.get("back")) if b < after]
    job_status = q.get("status")
    filt = JobStatus(job_status) if job_status in CHOICES["job_statuses"] else None
    jobs = await web.store.list_jobs(project_id, filt, after, JOBS_PER_PAGE)
    context: dict[str, Any] = {
        "form": project_form_values(summary), "jobs_json": "", **(extra or {}),
        **await progress_context(web.store, summary, web.now()),
        "refresh_s": refresh_seconds(q.get("refresh")),
    }
    links = pager(project_id, after, back, filt and filt.value, jobs.next_after_job_id)
    return page(
        web.env, "project.html", status=status, user=session.user, csrf=session.csrf,
        summary=summary, jobs=jobs, after=after, job_filter=filt and filt.value, error=error,
        pages=links, **context, **CHOICES,
    )


def _confirm_page(
    web: WebContext, session: Session, summary: ProjectSummary, *, status: int = 200,
    error: str | None = None,
) -> Response[bytes]:
    return page(
        web.env, "project_delete.html", status=status, user=session.user, csrf=session.csrf,
        summary=summary, error=error,
    )


def project_page_handlers(web: WebContext) -> list[HTTPRouteHandler]:
    """The admin home, project create/detail/update/delete and the enqueue box."""

    @get("/admin")
    async def admin_index(request: Request) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        return await admin_home(web, session, request=request)

    @post("/admin/projects", request_max_body_size=FORM_LIMIT)
    async def create_project(request: Request) -> Response[bytes]:
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

    @get("/admin/projects/{project_id:str}")
    async def project_detail(request: Request, project_id: FromPath[str]) -> Response[bytes]:
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        return await project_page(request, web, session, project_id)

    @post("/admin/projects/{project_id:str}/status", request_max_body_size=FORM_LIMIT)
    async def update_project(request: Request, project_id: FromPath[str]) -> Response[bytes]:
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

    @get("/admin/projects/{project_id:str}/delete")
    async def confirm_delete_project(request: Request, project_id: FromPath[str]) -> Response[bytes]:
        """The confirmation step before a delete: counts, and the project ID to type (no script:
        the CSP allows none, so the confirmation is a page of its own)."""
        session = await page_session(request, web, Role.ADMIN)
        if isinstance(session, Response):
            return session
        summary = await web.store.get_project(project_id) if is_id(project_id) else None
        if summary is None:
            return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
        return _confirm_page(web, session, summary)

    @post("/admin/projects/{project_id:str}/delete", request_max_body_size=FORM_LIMIT)
    async def delete_project(request: Request, project_id: FromPath[str]) -> Response[bytes]:
        """Spec §5.4: delete → 303 ``/admin``. The dashboard's own form also sends
        ``confirm_project_id`` (typed by hand), which must then match."""
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, form = gate
        summary = await web.store.get_project(project_id) if is_id(project_id) else None
        if summary is None:
            return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
        typed = form.get("confirm_project_id")
        if typed is not None and typed != project_id:
            return _confirm_page(
                web, session, summary, status=400,
                error=f"Type the project ID {project_id} exactly to delete it; nothing was deleted.",
            )
        try:
            await web.store.delete_project(project_id)
        except HqError as exc:
            return await project_page(
                request, web, session, project_id, status=400,
                error=f"Project deletion was rejected: {exc.message}",
            )
        total = sum(summary.job_counts.as_dict().values())
        notice = flash_cookie(f"Deleted project {project_id} and its {total:,} jobs.", web.secure)
        return redirect("/admin", cookies=[notice])

    @post("/admin/projects/{project_id:str}/jobs", request_max_body_size=FORM_LIMIT)
    async def enqueue_jobs(request: Request, project_id: FromPath[str]) -> Response[bytes]:
        gate = await post_session(request, web, Role.ADMIN)
        if isinstance(gate, Response):
            return gate
        session, form = gate
        summary = await web.store.get_project(project_id) if is_id(project_id) else None
        if summary is None:
            return error_page(web.env, 404, PROJECT_NOT_FOUND, user=session.user, csrf=session.csrf)
        raw = form.get("jobs_json")
        raw = raw if isinstance(raw, str) else ""
        try:
            specs = parse_enqueue_box(raw, summary.project.identity_mode)
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

    return [
        admin_index, create_project, project_detail, update_project, confirm_delete_project,
        delete_project, enqueue_jobs,
    ]  # fmt: skip
