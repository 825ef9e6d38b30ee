"""What the worker routes 20–23 do (spec §1.6, §1.7.11–§1.7.15), independent of how the request
arrived: Litestar's handlers (``worker_routes``) and the raw ASGI fast path (``fast_path``)
both call these, so each route's behaviour has one home.

Claim, complete, fail and extend-lease read a small body first (``read_early``) and, when it is
valid, run the gate read and the operation as one store call (``gated_*``: one round trip on
PostgreSQL); the gate's checks still raise first, in the wire order. Otherwise — a large or
invalid body — the gate runs first and the body is read or its error raised afterwards.
Each method returns the wire value of a 200 response or raises an :class:`HqError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from hq_apps.api import observers
from hq_apps.api import wire_in as w
from hq_apps.api.auth import client_version, gated_principal, request_token, worker_gate
from hq_apps.api.http import Incoming, read_early, read_json
from hq_apps.api.requestlog import set_worker_id
from hq_apps.api.wire_out import BatchResultOut, ClaimOut, claim_out, item_results
from hq_domain import validation as v
from hq_domain.errors import HqError
from hq_domain.ports import Store
from hq_domain.projects import WorkerOp, require_op_allowed
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem, ItemResult
from hq_domain.worker_tally import WorkerTally


def _claim_request(body: w.ClaimIn) -> ClaimRequest:
    return v.validate_claim(
        body.worker_id, body.max_jobs, body.lease_seconds, body.accept_types, body.policy_version
    )


def _complete_item(i: w.CompleteItemIn) -> CompleteItem:
    return v.complete_item(i.job_id, i.attempt_id, i.outcome, i.artifact_receipts)


def _fail_item(i: w.FailItemIn) -> FailItem:
    return v.fail_item(i.job_id, i.attempt_id, i.retryable, i.error)


@dataclass(frozen=True, slots=True)
class _ItemsOp:
    """What tells complete and fail apart; the steps are :meth:`WorkerOps._items_op`'s."""

    op: WorkerOp
    body: type[Any]
    message: str
    item: Callable[[Any], Any]
    gated: Callable[..., Awaitable[Any]]
    plain: Callable[..., Awaitable[list[ItemResult]]]


def _batch(body: Any, kind: _ItemsOp) -> tuple[str, list[Any]]:
    """Whole-batch validation for the one-round-trip path (read_early): pure, raises what the
    gate-first path would raise after the gate (which then also orders 409 before item errors)."""
    items_in = body.items or []
    v.check_batch_shape(body.worker_id, len(items_in), kind.message)
    return body.worker_id or "", [kind.item(i) for i in items_in]


def _extend_batch(body: w.ExtendIn) -> tuple[str, int, list[AttemptRef]]:
    items_in = body.items or []
    message = "invalid lease extension batch"
    v.check_batch_shape(body.worker_id, len(items_in), message)
    seconds = v.check_lease_seconds(body.extend_seconds, message)
    return (
        body.worker_id or "",
        seconds,
        [v.check_attempt_ref(i.job_id, i.attempt_id) for i in items_in],
    )


class WorkerOps:
    """``tally`` counts the completions and failures applied, per worker (a dict update on
    the request path; the history loop flushes it)."""

    def __init__(self, store: Store, tally: WorkerTally) -> None:
        self._store = store
        self._tally = tally
        self._complete = _ItemsOp(
            WorkerOp.COMPLETE, w.CompleteIn, "invalid completion batch", _complete_item,
            store.gated_complete, store.complete,
        )  # fmt: skip
        self._fail = _ItemsOp(
            WorkerOp.FAIL, w.FailIn, "invalid failure batch", _fail_item,
            store.gated_fail, store.fail,
        )  # fmt: skip

    async def _status_first(self, project_id: str, op_kind: WorkerOp, exc: HqError) -> NoReturn:
        """Item validation runs inside the reference's transaction, after the project-status
        check: an invalid item in an inactive project is a 409, not a 400."""
        project = await self._store.gate_project(project_id)
        if project is not None:
            require_op_allowed(project, op_kind)
        raise exc

    async def claim(self, request: Incoming, project_id: str) -> ClaimOut:
        store = self._store
        token = request_token(request)
        early = await read_early(request, w.ClaimIn)
        req = early.prepared(_claim_request) if early else None
        if early is not None and req is not None:
            found, project, result = await store.gated_claim(
                token, project_id, client_version(request), req
            )
            principal = gated_principal(request, found, project, project_id, result is not None)
            set_worker_id(request.scope, req.worker_id)
            if result is None:  # the gate passes only as re-checked here: something changed
                result = await store.claim(principal.user_id, project_id, req)
            observers.current.claim(project_id, len(result.jobs))
            return claim_out(result)
        principal, _ = await worker_gate(request, store, project_id)
        body = early.get() if early else await read_json(request, w.ClaimIn)
        set_worker_id(request.scope, body.worker_id)
        result = await store.claim(principal.user_id, project_id, _claim_request(body))
        observers.current.claim(project_id, len(result.jobs))
        return claim_out(result)

    async def _items_op(
        self, request: Incoming, project_id: str, kind: _ItemsOp
    ) -> tuple[str, list[ItemResult]]:
        """Complete or fail: (worker ID, per-item results)."""
        token = request_token(request)
        early = await read_early(request, kind.body)
        ready = early.prepared(lambda body: _batch(body, kind)) if early else None
        if ready is not None:
            worker_id, items = ready
            found, project, results = await kind.gated(
                token, project_id, client_version(request), worker_id, items
            )
            principal = gated_principal(request, found, project, project_id, results is not None)
            set_worker_id(request.scope, worker_id)
            if results is None:
                results = await kind.plain(principal.user_id, project_id, worker_id, items)
            return worker_id, results
        principal, _ = await worker_gate(request, self._store, project_id)
        body = early.get() if early else await read_json(request, kind.body)
        set_worker_id(request.scope, body.worker_id)
        items_in = body.items or []
        v.check_batch_shape(body.worker_id, len(items_in), kind.message)
        try:
            items = [kind.item(i) for i in items_in]
        except HqError as exc:
            await self._status_first(project_id, kind.op, exc)
        worker_id = body.worker_id or ""
        return worker_id, await kind.plain(principal.user_id, project_id, worker_id, items)

    async def complete(self, request: Incoming, project_id: str) -> BatchResultOut:
        worker_id, results = await self._items_op(request, project_id, self._complete)
        observers.current.items(project_id, "complete", results)
        self._tally.completed(project_id, worker_id, results)
        return item_results(results)

    async def fail(self, request: Incoming, project_id: str) -> BatchResultOut:
        worker_id, results = await self._items_op(request, project_id, self._fail)
        observers.current.items(project_id, "fail", results)
        self._tally.failed(project_id, worker_id, results)
        return item_results(results)

    async def extend_lease(self, request: Incoming, project_id: str) -> BatchResultOut:
        store = self._store
        token = request_token(request)
        early = await read_early(request, w.ExtendIn)
        ready = early.prepared(_extend_batch) if early else None
        if ready is not None:
            worker_id, seconds, refs = ready
            found, project, results = await store.gated_extend_lease(
                token, project_id, client_version(request), worker_id, seconds, refs
            )
            principal = gated_principal(request, found, project, project_id, results is not None)
            set_worker_id(request.scope, worker_id)
            if results is None:
                results = await store.extend_lease(
                    principal.user_id, project_id, worker_id, seconds, refs
                )
        else:
            principal, _ = await worker_gate(request, store, project_id)
            body = early.get() if early else await read_json(request, w.ExtendIn)
            set_worker_id(request.scope, body.worker_id)
            items_in = body.items or []
            message = "invalid lease extension batch"
            v.check_batch_shape(body.worker_id, len(items_in), message)
            seconds = v.check_lease_seconds(body.extend_seconds, message)
            try:
                refs = [v.check_attempt_ref(i.job_id, i.attempt_id) for i in items_in]
            except HqError as exc:
                await self._status_first(project_id, WorkerOp.EXTEND, exc)
            results = await store.extend_lease(
                principal.user_id, project_id, body.worker_id or "", seconds, refs
            )
        observers.current.items(project_id, "extend", results)
        return item_results(results)
