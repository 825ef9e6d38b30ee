"""MemoryStore: every Store port method over :class:`MemoryState`, one lock per call.

The clock is read after the lock is taken (D8), once per call, so each call sees one instant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from hq_adapters.memory import (
    admin_ops,
    monitor_ops,
    observe_ops,
    user_ops,
    web_ops,
    worker_ops,
)
from hq_adapters.memory.state import MemoryState
from hq_domain.clock import Clock, seconds
from hq_domain.ids import is_id
from hq_domain.jobs import Job, JobSpec, JobStatus
from hq_domain.monitoring import MonitorSnapshot
from hq_domain.ports import CommitTurn, Gated, JobPage, WorkerMapping
from hq_domain.progress import FailureGroup, HistoryPoint, WorkerActivity
from hq_domain.projects import IdentityMode, Project, ProjectPut, ProjectSummary
from hq_domain.users import Principal, Role, User, UserListItem, UserStatus
from hq_domain.validation import JobFields, validate_jobs
from hq_domain.worker import (
    AttemptRef,
    ClaimRequest,
    ClaimResult,
    CompleteItem,
    FailItem,
    ItemResult,
    gate_passes,
)
from hq_domain.worker_tally import Tallies

T = TypeVar("T")


class MemoryStore:
    """The in-memory adapter. ``state`` is exposed for test inspection hooks only."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = asyncio.Lock()
        self.state = MemoryState()

    async def _run(self, op: Callable[[int], T]) -> T:
        async with self._lock:
            return op(self._clock.now_ns())

    # --- auth ---------------------------------------------------------------------------
    async def principal_for_token(self, token: str) -> Principal | None:
        return await self._run(lambda _: user_ops.principal_for_token(self.state, token))

    # --- worker -------------------------------------------------------------------------
    async def gate_project(self, project_id: str) -> Project | None:
        return await self._run(lambda _: self.state.projects.get(project_id))

    async def worker_gate(
        self, token: str, project_id: str
    ) -> tuple[Principal | None, Project | None]:
        return await self._run(
            lambda _: (
                user_ops.principal_for_token(self.state, token),
                self.state.projects.get(project_id) if is_id(project_id) else None,
            )
        )

    async def _gated(
        self, token: str, project_id: str, client_version: str,
        op: Callable[[str], Awaitable[T]],
    ) -> Gated[T]:
        principal, project = await self.worker_gate(token, project_id)
        if principal is None or not gate_passes(principal, project, project_id, client_version):
            return principal, project, None
        return principal, None, await op(principal.user_id)

    async def gated_claim(
        self, token: str, project_id: str, client_version: str, request: ClaimRequest
    ) -> Gated[ClaimResult]:
        return await self._gated(
            token, project_id, client_version, lambda user: self.claim(user, project_id, request)
        )

    async def gated_complete(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[CompleteItem],
    ) -> Gated[list[ItemResult]]:
        return await self._gated(
            token, project_id, client_version,
            lambda user: self.complete(user, project_id, worker_id, items),
        )

    async def gated_fail(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[FailItem],
    ) -> Gated[list[ItemResult]]:
        return await self._gated(
            token, project_id, client_version,
            lambda user: self.fail(user, project_id, worker_id, items),
        )

    async def gated_extend_lease(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        extend_seconds: int, items: Sequence[AttemptRef],
    ) -> Gated[list[ItemResult]]:
        return await self._gated(
            token, project_id, client_version,
            lambda user: self.extend_lease(user, project_id, worker_id, extend_seconds, items),
        )

    async def policy(self, user_id: str, project_id: str) -> Project:
        return await self._run(lambda _: worker_ops.policy(self.state, user_id, project_id))

    async def claim(self, user_id: str, project_id: str, request: ClaimRequest) -> ClaimResult:
        return await self._run(
            lambda now: worker_ops.claim(self.state, user_id, project_id, request, now)
        )

    async def complete(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[CompleteItem]
    ) -> list[ItemResult]:
        return await self._run(
            lambda now: worker_ops.complete(self.state, user_id, project_id, worker_id, items, now)
        )

    async def fail(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[FailItem]
    ) -> list[ItemResult]:
        return await self._run(
            lambda now: worker_ops.fail(self.state, user_id, project_id, worker_id, items, now)
        )

    async def extend_lease(
        self,
        user_id: str,
        project_id: str,
        worker_id: str,
        extend_seconds: int,
        items: Sequence[AttemptRef],
    ) -> list[ItemResult]:
        return await self._run(
            lambda now: worker_ops.extend_lease(
                self.state, user_id, project_id, worker_id, extend_seconds, items, now
            )
        )

    # --- admin: projects and jobs -------------------------------------------------------
    async def list_projects(self) -> list[ProjectSummary]:
        return await self._run(lambda _: admin_ops.list_projects(self.state))

    async def get_project(self, project_id: str) -> ProjectSummary | None:
        return await self._run(lambda _: admin_ops.get_project(self.state, project_id))

    async def put_project(self, project_id: str, put: ProjectPut) -> ProjectSummary:
        return await self._run(lambda now: admin_ops.put_project(self.state, project_id, put, now))

    async def delete_project(self, project_id: str) -> None:
        await self._run(lambda _: admin_ops.delete_project(self.state, project_id))

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        return await self._run(lambda now: admin_ops.enqueue(self.state, project_id, jobs, now))

    async def enqueue_fields(
        self, project_id: str, items: Sequence[JobFields], mode: IdentityMode
    ) -> int:
        return await self.enqueue(project_id, validate_jobs(items, mode))

    async def enqueue_batches(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        turn: CommitTurn | None = None,
    ) -> list[int]:
        if turn is not None:
            # Job ids are taken when the batches are applied, which happens at the turn's
            # commit: earlier calls have applied theirs by then, so ids follow the line.
            await turn.ids_turn()
            turn.ids_taken()
            await turn.commit_turn()
        return await self._run(
            lambda now: admin_ops.enqueue_batches(self.state, project_id, batches, now)
        )

    async def list_jobs(
        self, project_id: str, status: JobStatus | None, after_job_id: int, limit: int
    ) -> JobPage:
        return await self._run(
            lambda _: admin_ops.list_jobs(self.state, project_id, status, after_job_id, limit)
        )

    async def get_job(self, project_id: str, job_id: int) -> Job | None:
        return await self._run(lambda _: admin_ops.get_job(self.state, project_id, job_id))

    async def requeue_job(self, project_id: str, job_id: int) -> None:
        await self._run(lambda now: admin_ops.requeue_job(self.state, project_id, job_id, now))

    async def delete_job(self, project_id: str, job_id: int) -> None:
        await self._run(lambda _: admin_ops.delete_job(self.state, project_id, job_id))

    # --- admin: users and tokens --------------------------------------------------------
    async def list_users(self) -> list[UserListItem]:
        return await self._run(lambda _: user_ops.list_users(self.state))

    async def get_user(self, user_id: str) -> User | None:
        return await self._run(lambda _: self.state.users.get(user_id))

    async def put_user(self, user_id: str, status: UserStatus, roles: Sequence[Role]) -> None:
        await self._run(lambda now: user_ops.put_user(self.state, user_id, status, roles, now))

    async def delete_user(self, user_id: str) -> None:
        await self._run(lambda _: user_ops.delete_user(self.state, user_id))

    async def get_machine_token(self, user_id: str) -> str | None:
        return await self._run(lambda _: user_ops.get_machine_token(self.state, user_id))

    async def set_machine_token(self, user_id: str, token: str) -> None:
        await self._run(lambda now: user_ops.set_machine_token(self.state, user_id, token, now))

    async def revoke_machine_token(self, user_id: str) -> None:
        await self._run(lambda now: user_ops.revoke_machine_token(self.state, user_id, now))

    async def bootstrap_user(self, user_id: str, roles: Sequence[Role], token: str) -> None:
        await self._run(
            lambda now: user_ops.bootstrap_user(self.state, user_id, roles, token, now)
        )

    # --- maintenance ----------------------------------------------------------------------
    async def sweep_expired(self, limit: int) -> int:
        """D2: reset up to ``limit`` expired WIP rows of any project, oldest deadline first."""

        def sweep(now_ns: int) -> int:
            now_s = seconds(now_ns)
            n = max(0, limit)
            expired = [job for pid in self.state.projects for job in self.state.pop_expired(pid, now_s, n)]
            expired.sort(key=lambda j: (j.lease_expires_at or 0, j.job_id))
            for job in expired[:n]:
                self.state.expire(job, self.state.projects[job.project_id].max_resets, now_s)
            self.state.restore_expired(expired[n:])
            return len(expired[:n])

        return await self._run(sweep)

    async def prune_claim_buckets(self, before_ms: int) -> int:
        return await self._run(lambda _: monitor_ops.prune_claim_buckets(self.state, before_ms))

    # --- monitor ----------------------------------------------------------------------------
    async def monitor_snapshot(self, window_s: int, bucket_window_s: int) -> MonitorSnapshot:
        return await self._run(
            lambda now: monitor_ops.monitor_snapshot(
                self.state, seconds(now), window_s, bucket_window_s
            )
        )

    # --- observe (issue 14) -----------------------------------------------------------------
    async def ping(self, timeout_s: float) -> None:
        """What a worker request first waits for here: the store lock, then a project read."""
        del timeout_s  # the caller abandons a hung probe; nothing to cancel server-side
        await self.gate_project("readyz-probe")

    async def fold_counts(self) -> int:
        """Nothing to fold: memory counts are the status indexes' sizes."""
        return 0

    async def record_history(self) -> int:
        return await self._run(lambda now: observe_ops.record_history(self.state, seconds(now)))

    async def project_history(self, project_id: str, since_s: int) -> list[HistoryPoint]:
        return await self._run(
            lambda _: observe_ops.project_history(self.state, project_id, since_s)
        )

    async def all_history(self, since_s: int) -> dict[str, list[HistoryPoint]]:
        return await self._run(lambda _: observe_ops.all_history(self.state, since_s))

    async def recent_failures(self, project_id: str, sample: int) -> list[FailureGroup]:
        return await self._run(
            lambda _: observe_ops.recent_failures(self.state, project_id, sample)
        )

    async def worker_activity(self, project_id: str | None, since_s: int) -> list[WorkerActivity]:
        return await self._run(
            lambda _: observe_ops.worker_activity(self.state, project_id, since_s)
        )

    async def queue_health(self) -> dict[str, tuple[int | None, int]]:
        return await self._run(lambda now: observe_ops.queue_health(self.state, seconds(now)))

    async def record_worker_minutes(self, tallies: Tallies) -> int:
        return await self._run(
            lambda now: observe_ops.record_worker_minutes(self.state, tallies, seconds(now))
        )

    # --- web ------------------------------------------------------------------------------
    async def create_session(self, digest: bytes, user_id: str, expires_at: int) -> None:
        await self._run(
            lambda now: web_ops.create_session(self.state, digest, user_id, expires_at, now)
        )

    async def session_user(self, digest: bytes) -> User | None:
        return await self._run(lambda now: web_ops.session_user(self.state, digest, now))

    async def delete_session(self, digest: bytes) -> None:
        await self._run(lambda _: web_ops.delete_session(self.state, digest))

    async def upsert_github_admin(self, github_user_id: int, login: str, avatar_url: str) -> User:
        return await self._run(
            lambda now: web_ops.upsert_github_admin(self.state, github_user_id, login, avatar_url, now)
        )

    async def upsert_github_worker(self, github_user_id: int, login: str, avatar_url: str) -> User:
        return await self._run(
            lambda now: web_ops.upsert_github_worker(self.state, github_user_id, login, avatar_url, now)
        )

    async def list_worker_mappings(self, worker_id: str | None, limit: int) -> list[WorkerMapping]:
        return await self._run(
            lambda _: web_ops.list_worker_mappings(self.state, worker_id, limit)
        )

    async def close(self) -> None:
        return None
