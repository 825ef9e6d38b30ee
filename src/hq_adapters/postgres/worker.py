"""The worker API (spec §2.4, §1.7.10–1.7.15) and the background expiry sweep (D2).

Complete, fail and extend-lease are each one autocommit statement (``*_op`` in
``sql/worker_ops.sql``) that re-reads user and project, upserts the worker mapping and does the
work, or writes nothing when a check fails; then the checks are re-read to raise the spec's
error (see :meth:`PostgresWorker._declined`). The common claim (unlimited, unaudited project)
is one such statement too; when it declines (a failed check, token bucket, audit, other claim
order) the general claim runs: one transaction with a context statement (user, project,
worker mapping) and one set-based statement per step — never a round trip per job (D6) —
which raises the spec's errors.

Batches of at most ``GENERIC_PLAN_MAX_ITEMS`` run the one-statement forms, and every request
its gate read, through migration 0006's functions, whose plans PostgreSQL caches (generic,
without session state, so also behind a transaction-mode pooler); larger batches are planned
per execution with their actual size.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import asyncpg

from hq_adapters.postgres import rows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_adapters.postgres.worker_binding import (
    complete_args,
    extend_args,
    fail_args,
    gate_row,
    item_results,
    new_attempt_ids,
    principal_of,
    token_digest,
)
from hq_adapters.postgres.worker_statements import (
    ALLOWED_STATUSES,
    CLAIM_OP_SQL,
    CLAIM_SQL,
    GATED_SQL,
    GENERIC_PLAN_MAX_ITEMS,
    JOINED_SQL,
    MUTATION_SQL,
)
from hq_domain import ratelimit
from hq_domain.clock import millis, seconds
from hq_domain.errors import NotFound, PermissionDenied, ProjectDispatchRateLimited
from hq_domain.ids import is_id
from hq_domain.jobs import ClaimedJob
from hq_domain.ports import Gated
from hq_domain.projects import (
    ClaimOrder,
    Project,
    WorkerOp,
    require_op_allowed,
)
from hq_domain.users import Principal, UserStatus, require_worker
from hq_domain.worker import (
    CLAIM_SWEEP_LIMIT,
    UNLIMITED_RETRY_AFTER_MS,
    AttemptRef,
    ClaimRequest,
    ClaimResult,
    CompleteItem,
    FailItem,
    ItemResult,
    bucket_start_ms,
    gate_passes,
    plan_claim,
)

R = TypeVar("R")


class PostgresWorker:
    """WorkerPort over PostgreSQL.

    ``claim_sweep_limit`` bounds the expired leases a claim resets (D2); batches of at most
    ``generic_plan_max_items`` run through migration 0006's functions (0: never);
    ``claim_orders`` seeds the per-project claim order hints (see :attr:`claim_orders`).
    """

    def __init__(
        self,
        db: Database,
        *,
        claim_sweep_limit: int = CLAIM_SWEEP_LIMIT,
        generic_plan_max_items: int = GENERIC_PLAN_MAX_ITEMS,
        claim_orders: Mapping[str, ClaimOrder] | None = None,
    ) -> None:
        self._db = db
        self._claim_sweep_limit = claim_sweep_limit
        self._generic_max = generic_plan_max_items
        # Last claim order seen per project: picks the fast claim statement to try first (the
        # statement checks it, so a stale hint costs one round trip, never a wrong order).
        self._claim_order_hint: dict[str, ClaimOrder] = dict(claim_orders or {})

    @property
    def claim_orders(self) -> Mapping[str, ClaimOrder]:
        """The claim order last seen per project (read-only view): the fast claim statement
        tried first. Learnt from the general path, which reads the project."""
        return MappingProxyType(self._claim_order_hint)

    async def _context(
        self, conn: asyncpg.Connection, user_id: str, project_id: str, worker_id: str | None,
        op: WorkerOp,
    ) -> Project:
        """Re-read user and project (spec §1.6 step 8) and upsert the worker mapping."""
        r = await conn.fetchrow(
            q("worker_context"), user_id, project_id, worker_id, ALLOWED_STATUSES[op]
        )
        if r["user_status"] is None:
            raise PermissionDenied("active worker role required")
        require_worker(UserStatus(r["user_status"]), rows.roles(r["user_roles"]))
        if r["id"] is None:
            raise NotFound("project not found")
        project = rows.project(r)
        require_op_allowed(project, op)
        return project

    async def gate_project(self, project_id: str) -> Project | None:
        r = await self._db.fetchrow("get_project", project_id)
        return None if r is None else rows.project(r)

    async def worker_gate(
        self, token: str, project_id: str
    ) -> tuple[Principal | None, Project | None]:
        r = await self._db.fetchrow(
            "worker_gate", token_digest(token), project_id if is_id(project_id) else None
        )
        return principal_of(r), None if r["id"] is None else rows.project(r)

    async def policy(self, user_id: str, project_id: str) -> Project:
        return await self._checked(user_id, project_id, WorkerOp.POLICY)

    async def _checked(self, user_id: str, project_id: str, op: WorkerOp) -> Project:
        """The project, if the user and project pass ``op``'s checks (else the spec's error).
        One read-only statement (no worker_id: nothing is upserted), so no transaction."""
        async with self._db.connection() as conn:
            return await self._context(conn, user_id, project_id, None, op)

    async def claim(self, user_id: str, project_id: str, request: ClaimRequest) -> ClaimResult:
        order = self._claim_order_hint.get(project_id, ClaimOrder.FIFO)
        now_s = self._db.now_s()
        found = await self._db.fetch(
            CLAIM_OP_SQL[order, request.max_jobs <= self._generic_max],
            project_id,
            list(request.accept_types),
            request.max_jobs,
            new_attempt_ids(request.max_jobs),
            request.worker_id,
            now_s + request.lease_seconds,
            now_s,
            user_id,
            self._claim_sweep_limit,
            ALLOWED_STATUSES[WorkerOp.CLAIM],
        )
        head = found[0]
        if not head["fast"]:
            return await self.claim_in_steps(user_id, project_id, request)
        jobs = [rows.claimed(r) for r in found if r["job_id"] is not None]
        return ClaimResult(project_id, jobs, UNLIMITED_RETRY_AFTER_MS, head["policy_version"])

    async def claim_in_steps(
        self, user_id: str, project_id: str, request: ClaimRequest
    ) -> ClaimResult:
        """The general claim: spec §2.4 step by step in one transaction. ``claim`` runs it when
        the one-statement claim declines (a check failed, a dispatch-limited or audited project,
        a stale order hint); public so tests can compare the two on the same rows."""
        limited: ProjectDispatchRateLimited | None = None
        jobs: list[ClaimedJob] = []
        retry_after = UNLIMITED_RETRY_AFTER_MS
        accept = list(request.accept_types)
        async with self._db.transaction() as conn:
            project = await self._context(
                conn, user_id, project_id, request.worker_id, WorkerOp.CLAIM
            )
            self._claim_order_hint[project_id] = project.claim_order
            if project.dispatch_qps is not None:
                # D8: lock first, read the clock after, so the bucket sees time move forward.
                locked = await conn.fetchrow(q("lock_project"), project_id)
                if locked is None:
                    raise NotFound("project not found")
                project = rows.project(locked)
                require_op_allowed(project, WorkerOp.CLAIM)
            now_ns = self._db.now_ns()
            now_s = seconds(now_ns)
            plan = plan_claim(project, request.max_jobs, now_ns)
            await conn.execute(
                q("sweep_project"), project_id, now_s, self._claim_sweep_limit, project.max_resets
            )
            qps = project.dispatch_qps
            if plan.limit < 1:
                assert plan.tokens is not None and qps is not None
                has_work = await conn.fetchval(q("todo_exists"), project_id, accept)
                refilled_at = ratelimit.advance_refill_time(project.dispatch_refilled_at_ns, now_ns)
                await conn.execute(q("store_dispatch_bucket"), project_id, plan.tokens, refilled_at)
                if has_work:
                    limited = ProjectDispatchRateLimited(
                        project_id, project.policy_version,
                        ratelimit.retry_after_ms(plan.tokens, qps),
                    )
            else:
                await conn.execute(q("claim_plan_settings"))
                found = await conn.fetch(
                    q(CLAIM_SQL[project.claim_order]),
                    project_id,
                    accept,
                    plan.limit,
                    new_attempt_ids(plan.limit),
                    request.worker_id,
                    now_s + request.lease_seconds,
                    now_s,
                )
                jobs = [rows.claimed(r) for r in found]
                if plan.tokens is not None and qps is not None and jobs:
                    bucket, retry_after = ratelimit.after_claim(
                        plan.tokens, len(jobs), project.dispatch_refilled_at_ns, now_ns, qps
                    )
                    await conn.execute(
                        q("store_dispatch_bucket"), project_id, bucket.tokens,
                        bucket.refilled_at_ns,
                    )
            if project.worker_claim_qps is not None:
                await conn.execute(
                    q("record_claim_bucket"), project_id, request.worker_id,
                    bucket_start_ms(millis(now_ns)), len(jobs), request.policy_version,
                )
        if limited is not None:
            raise limited
        return ClaimResult(project_id, jobs, retry_after, project.policy_version)

    async def complete(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[CompleteItem]
    ) -> list[ItemResult]:
        args = complete_args(project_id, worker_id, items, self._db.now_s())
        return item_results(items, await self._mutate(WorkerOp.COMPLETE, args, user_id))

    async def fail(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[FailItem]
    ) -> list[ItemResult]:
        args = fail_args(project_id, worker_id, items, self._db.now_s())
        return item_results(items, await self._mutate(WorkerOp.FAIL, args, user_id))

    async def extend_lease(
        self,
        user_id: str,
        project_id: str,
        worker_id: str,
        extend_seconds: int,
        items: Sequence[AttemptRef],
    ) -> list[ItemResult]:
        args = extend_args(project_id, worker_id, items, self._db.now_s(), extend_seconds)
        return item_results(items, await self._mutate(WorkerOp.EXTEND, args, user_id), args[-1])

    async def _mutate(
        self, op: WorkerOp, args: tuple[Any, ...], user_id: str,
        fast_row: asyncpg.Record | None = None,
    ) -> list[str | None]:
        """Per-item resulting statuses (None = rejected) of a complete/fail/extend batch.

        ``args`` start with project and worker id. The one-statement form does it all in one
        round trip (``fast_row``: its result when a gated call already ran it)."""
        if fast_row is None:
            fast_row = await self._db.fetchrow(
                self._mutation_sql(op, len(args[2])), *args, user_id, ALLOWED_STATUSES[op]
            )
        if fast_row["ok"]:
            return list(fast_row["job_statuses"])
        return await self._declined(op, args, user_id)

    def _mutation_sql(self, op: WorkerOp, items: int) -> str:
        """The statement for a batch of ``items`` (the gated functions choose alike)."""
        custom, generic, one = MUTATION_SQL[op]
        if items > self._generic_max:
            return custom
        return one if items == 1 else generic

    async def _declined(
        self, op: WorkerOp, args: tuple[Any, ...], user_id: str
    ) -> list[str | None]:
        """The statement wrote nothing: the user or the project failed a check when it read
        them. Re-read them and raise the spec's error (§1.6 order). If they pass now, they
        changed since the statement's read, which then counts as not yet seen: the statement
        runs again with the new state (once; another change in that window is an error)."""
        await self._checked(user_id, args[0], op)
        row = await self._db.fetchrow(
            self._mutation_sql(op, len(args[2])), *args, user_id, ALLOWED_STATUSES[op]
        )
        if row["ok"]:
            return list(row["job_statuses"])
        await self._checked(user_id, args[0], op)
        raise RuntimeError("the user or project changed twice during one worker request")

    # --- the gate and the operation in one round trip (small batches) -----------------------
    def _gate_args(
        self, token: str, project_id: str, client_version: str
    ) -> tuple[bytes | None, str | None, str | None]:
        """Bound like worker_gate's; a version PostgreSQL text cannot hold matches nothing."""
        return (
            token_digest(token),
            project_id if is_id(project_id) else None,
            None if "\x00" in client_version else client_version,
        )

    async def _gate_then(
        self, token: str, project_id: str, client_version: str, op: Callable[[str], Awaitable[R]]
    ) -> Gated[R]:
        """The two-round-trip form, for batches planned per execution."""
        principal, project = await self.worker_gate(token, project_id)
        if principal is None or not gate_passes(principal, project, project_id, client_version):
            return principal, project, None
        return principal, None, await op(principal.user_id)

    async def gated_claim(
        self, token: str, project_id: str, client_version: str, request: ClaimRequest
    ) -> Gated[ClaimResult]:
        if request.max_jobs > self._generic_max:
            return await self._gate_then(
                token, project_id, client_version,
                lambda user: self.claim(user, project_id, request),
            )
        order = self._claim_order_hint.get(project_id, ClaimOrder.FIFO)
        now_s = self._db.now_s()
        call = (
            *self._gate_args(token, project_id, client_version),
            order.value,
            list(request.accept_types),
            request.max_jobs,
            new_attempt_ids(request.max_jobs),
            request.worker_id,
            now_s + request.lease_seconds,
            now_s,
            self._claim_sweep_limit,
            ALLOWED_STATUSES[WorkerOp.CLAIM],
        )
        r = await self._db.fetchrow_joined(
            "gated_claim", "gated_claim_joined", project_id, call, request.max_jobs
        )
        principal, project = gate_row(r)
        if not r["ran"]:
            return principal, project, None
        assert principal is not None
        if not r["fast"]:
            return principal, None, await self.claim_in_steps(principal.user_id, project_id, request)
        jobs = [
            ClaimedJob(job_id, attempt_id, lease, value, external_id, rows.load(spec) or {})
            for job_id, attempt_id, lease, value, external_id, spec in zip(
                r["job_ids"] or (), r["attempt_ids"] or (), r["leases"] or (),
                r["job_values"] or (), r["external_ids"] or (), r["specs"] or (), strict=True,
            )
        ]
        result = ClaimResult(project_id, jobs, UNLIMITED_RETRY_AFTER_MS, r["policy_version"])
        return principal, None, result

    async def _gated_mutate(
        self, op: WorkerOp, token: str, project_id: str, client_version: str,
        args: tuple[Any, ...],
    ) -> Gated[list[str | None]]:
        if len(args[2]) > self._generic_max:
            return await self._gate_then(
                token, project_id, client_version, lambda user: self._mutate(op, args, user)
            )
        call = (*self._gate_args(token, project_id, client_version), *args[1:], ALLOWED_STATUSES[op])
        joined_sql = JOINED_SQL.get(op)
        r = await (
            self._db.fetchrow(GATED_SQL[op], *call) if joined_sql is None
            else self._db.fetchrow_joined(GATED_SQL[op], joined_sql, project_id, call, len(args[2]))
        )
        principal, project = gate_row(r)
        if not r["ran"]:
            return principal, project, None
        assert principal is not None
        return principal, None, await self._mutate(op, args, principal.user_id, r)

    async def gated_complete(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[CompleteItem],
    ) -> Gated[list[ItemResult]]:
        args = complete_args(project_id, worker_id, items, self._db.now_s())
        principal, project, statuses = await self._gated_mutate(
            WorkerOp.COMPLETE, token, project_id, client_version, args
        )
        return principal, project, None if statuses is None else item_results(items, statuses)

    async def gated_fail(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[FailItem],
    ) -> Gated[list[ItemResult]]:
        args = fail_args(project_id, worker_id, items, self._db.now_s())
        principal, project, statuses = await self._gated_mutate(
            WorkerOp.FAIL, token, project_id, client_version, args
        )
        return principal, project, None if statuses is None else item_results(items, statuses)

    async def gated_extend_lease(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        extend_seconds: int, items: Sequence[AttemptRef],
    ) -> Gated[list[ItemResult]]:
        args = extend_args(project_id, worker_id, items, self._db.now_s(), extend_seconds)
        principal, project, statuses = await self._gated_mutate(
            WorkerOp.EXTEND, token, project_id, client_version, args
        )
        if statuses is None:
            return principal, project, None
        return principal, project, item_results(items, statuses, args[-1])
