"""Worker API, routes 19–23 (spec §1.6, §1.7.10–§1.7.15), as Litestar handlers.

What claim, complete, fail and extend-lease do lives in :mod:`hq_apps.api.worker_ops`; the
edge answers those four through :mod:`hq_apps.api.fast_path` without reaching these handlers,
which stay the routes' OpenAPI documentation and answer whatever the fast path does not take
(and everything when ``Settings.worker_fast_path`` is off, as the differential tests run it).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from hq_apps.api import wire_in as w
from hq_apps.api.auth import worker_gate
from hq_apps.api.http import json_response
from hq_apps.api.openapi import CLIENT_VERSION, WORKER_ERRORS, op
from hq_apps.api.wire_out import BatchResultOut, ClaimOut, PolicyOut, policy_out
from hq_apps.api.worker_ops import WorkerOps
from hq_domain.ports import Store

_Req = Request[Any, Any, Any]
TAGS = ["worker"]
WORKER: dict[str, Any] = {"errors": WORKER_ERRORS, "params": [CLIENT_VERSION]}
CLAIM: dict[str, Any] = {**WORKER, "errors": (*WORKER_ERRORS, 429)}


def worker_handlers(store: Store, ops: WorkerOps) -> list[HTTPRouteHandler]:
    @get(
        "/api/v1/projects/{project_id:str}", **op("Project policy", TAGS, None, PolicyOut, **WORKER)
    )
    async def project_policy(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        principal, _ = await worker_gate(request, store, project_id)
        return json_response(policy_out(await store.policy(principal.user_id, project_id)))

    @post(
        "/api/v1/projects/{project_id:str}/jobs/claim",
        **op("Claim jobs", TAGS, w.ClaimIn, ClaimOut, **CLAIM),
    )
    async def claim(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        return json_response(await ops.claim(request, project_id))

    @post(
        "/api/v1/projects/{project_id:str}/jobs/complete",
        **op("Complete attempts", TAGS, w.CompleteIn, BatchResultOut, **WORKER),
    )
    async def complete(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        return json_response(await ops.complete(request, project_id))

    @post(
        "/api/v1/projects/{project_id:str}/jobs/fail",
        **op("Fail attempts", TAGS, w.FailIn, BatchResultOut, **WORKER),
    )
    async def fail(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        return json_response(await ops.fail(request, project_id))

    @post(
        "/api/v1/projects/{project_id:str}/jobs/extend-lease",
        **op("Extend leases", TAGS, w.ExtendIn, BatchResultOut, **WORKER),
    )
    async def extend_lease(request: _Req, project_id: FromPath[str]) -> Response[bytes]:
        return json_response(await ops.extend_lease(request, project_id))

    return [project_policy, claim, complete, fail, extend_lease]
