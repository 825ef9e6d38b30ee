"""Admin project and job routes 3–7 and 9–12 (spec §1.7.1–§1.7.8).

Route 8 (source upload) lives in :mod:`hq_apps.api.source_upload` and is wired in ``app.py``.
Check order on every admin route: 401 → 403 → body decode → validation/lookup.
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.api import wire_in as w
from hq_apps.api.auth import admin_principal
from hq_apps.api.http import json_response, no_content, read_json
from hq_apps.api.openapi import ADMIN_ERRORS, JOB_QUERY, RESOURCE_ERRORS, op
from hq_apps.api.wire_out import (
    AdminJobOut,
    EnqueueOut,
    JobPageOut,
    ProjectListOut,
    ProjectSummaryOut,
    admin_job,
    project_summary,
)
from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.ids import is_id
from hq_domain.jobs import JobStatus
from hq_domain.ports import Store
from hq_domain.projects import ProjectPut, require_enqueue_allowed

_Req = Request[Any, Any, Any]
TAGS = ["admin: projects"]
PROJECT = "/api/v1/admin/projects/{project_id:str}"
JOB = PROJECT + "/jobs/{job_id:str}"
_INT_RE = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2**63 - 1


def parse_int64(text: str, message: str) -> int:
    """Go ``strconv.ParseInt(s, 10, 64)``: optional sign, decimal digits, int64 range."""
    if not _INT_RE.fullmatch(text):
        raise InvalidRequest(message)
    value = int(text)
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise InvalidRequest(message)
    return value


def _job_ref(project_id: str, job_id: str) -> int:
    number = parse_int64(job_id, "invalid job_id")
    if number < 1 or not is_id(project_id):
        raise InvalidRequest("invalid job")
    return number


def project_handlers(store: Store) -> list[HTTPRouteHandler]:
    @get(
        "/api/v1/admin/projects",
        **op("List projects", TAGS, None, ProjectListOut, errors=ADMIN_ERRORS),
    )
    async def list_projects(request: _Req) -> Response[bytes]:
        await admin_principal(request, store)
        summaries = await store.list_projects()
        return json_response(ProjectListOut([project_summary(s) for s in summaries]))

    @get(PROJECT, **op("Get project", TAGS, None, ProjectSummaryOut, errors=RESOURCE_ERRORS))
    async def get_project(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        if not is_id(project_id):
            raise InvalidRequest("invalid project ID")
        summary = await store.get_project(project_id)
        if summary is None:
            raise NotFound("project not found")
        return json_response(project_summary(summary))

    @put(
        PROJECT,
        **op(
            "Create or update project", TAGS, w.PutProjectIn, ProjectSummaryOut, errors=ADMIN_ERRORS
        ),
    )
    async def put_project(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        body = await read_json(request, w.PutProjectIn)
        put_ = ProjectPut(
            status=body.status or "",
            identity_mode=body.identity_mode,
            claim_order=body.claim_order,
            dispatch_qps=body.dispatch_qps,
            worker_claim_qps=body.worker_claim_qps,
            max_jobs_per_claim=body.max_jobs_per_claim,
            max_resets=body.max_resets,
            recommended_lease_seconds=body.recommended_lease_seconds,
            client_versions=None if body.client_versions is None else tuple(body.client_versions),
        )
        return json_response(project_summary(await store.put_project(project_id, put_)))

    @delete(
        PROJECT,
        status_code=204,
        **op("Delete project", TAGS, None, None, status=204, errors=RESOURCE_ERRORS),
    )
    async def delete_project(request: _Req, project_id: FromPath[str]) -> Response[None]:
        await admin_principal(request, store)
        if not is_id(project_id):
            raise InvalidRequest("invalid project ID")
        await store.delete_project(project_id)
        return no_content()

    @post(
        PROJECT + "/jobs",
        **op("Enqueue jobs", TAGS, w.EnqueueIn, EnqueueOut, errors=(*RESOURCE_ERRORS, 409)),
    )
    async def enqueue(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        body = await read_json(request, w.EnqueueIn)
        if not body.jobs:
            raise InvalidRequest("jobs must contain at least one item")
        if not is_id(project_id):
            raise InvalidRequest("invalid project or job batch")
        project = await store.gate_project(project_id)
        if project is None:
            raise NotFound("project not found")
        require_enqueue_allowed(project)
        inserted = await store.enqueue_fields(project_id, body.jobs, project.identity_mode)
        return json_response(EnqueueOut(project_id, len(body.jobs), inserted))

    @get(
        PROJECT + "/jobs",
        **op("List jobs", TAGS, None, JobPageOut, errors=RESOURCE_ERRORS, params=JOB_QUERY),
    )
    async def list_jobs(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        await admin_principal(request, store)
        query = request.query_params
        after_text, limit_text = query.get("after_job_id", ""), query.get("limit", "")
        after = parse_int64(after_text, "invalid after_job_id") if after_text else 0
        limit = parse_int64(limit_text, "invalid limit") if limit_text else 50
        status_text = query.get("status", "")
        if (
            not is_id(project_id)
            or after < 0
            or not 1 <= limit <= 200
            or (status_text and status_text not in JobStatus.__members__.values())
        ):
            raise InvalidRequest("invalid job query")
        status = JobStatus(status_text) if status_text else None
        page = await store.list_jobs(project_id, status, after, limit)
        return json_response(JobPageOut([admin_job(j) for j in page.jobs], page.next_after_job_id))

    @get(JOB, **op("Get job", TAGS, None, AdminJobOut, errors=RESOURCE_ERRORS))
    async def get_job(
        request: _Req, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[bytes]:
        await admin_principal(request, store)
        job = await store.get_job(project_id, _job_ref(project_id, job_id))
        if job is None:
            raise NotFound("job not found")
        return json_response(admin_job(job))

    @post(
        JOB + "/requeue",
        status_code=204,
        **op("Requeue job", TAGS, None, None, status=204, errors=ADMIN_ERRORS),
    )
    async def requeue_job(
        request: _Req, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[None]:
        await admin_principal(request, store)
        await store.requeue_job(project_id, _job_ref(project_id, job_id))
        return no_content()

    @delete(
        JOB, status_code=204, **op("Delete job", TAGS, None, None, status=204, errors=ADMIN_ERRORS)
    )
    async def delete_job(
        request: _Req, project_id: FromPath[str], job_id: FromPath[str]
    ) -> Response[None]:
        await admin_principal(request, store)
        await store.delete_job(project_id, _job_ref(project_id, job_id))
        return no_content()

    return [
        list_projects, get_project, put_project, delete_project, enqueue,
        list_jobs, get_job, requeue_job, delete_job,
    ]  # fmt: skip
