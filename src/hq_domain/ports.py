"""Ports: what the apps need from a store, split by consumer (STYLE §1).

Every method is one atomic use case. Adapters read time from the Clock they were built with,
once per call, and pass it through the domain rules; validation of request shapes has already
happened (the app calls :mod:`hq_domain.validation`), so adapters see only valid requests.
Errors are :class:`hq_domain.errors.HqError` subclasses with the spec's codes and messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hq_domain.jobs import Job, JobSpec, JobStatus
from hq_domain.monitoring import MonitorSnapshot
from hq_domain.progress import FailureGroup, HistoryPoint, WorkerActivity
from hq_domain.projects import IdentityMode, Project, ProjectPut, ProjectSummary
from hq_domain.users import Principal, Role, User, UserListItem, UserStatus
from hq_domain.validation import JobFields
from hq_domain.worker import (
    AttemptRef,
    ClaimRequest,
    ClaimResult,
    CompleteItem,
    FailItem,
    ItemResult,
)
from hq_domain.worker_tally import Tallies

R = TypeVar("R")
Gated = tuple[Principal | None, Project | None, R | None]
"""What a ``gated_*`` call read for the gate and what its operation returned: the token's owner;
the project, only when the gate did not pass (the caller raises the gate's error from it; a
passing gate has none to raise, and the PostgreSQL adapter no longer reads it back then:
migration 0020); the operation's result, None exactly when the gate did not pass."""


@dataclass(frozen=True, slots=True)
class JobPage:
    jobs: list[Job]
    next_after_job_id: int | None


@dataclass(frozen=True, slots=True)
class WorkerMapping:
    worker_id: str
    user_id: str


class AuthPort(Protocol):
    async def principal_for_token(self, token: str) -> Principal | None:
        """The owner of a valid, non-revoked machine token (looked up by digest), else None."""
        ...


class WorkerPort(Protocol):
    """The worker API. Each call re-reads user and project inside its transaction and raises
    PermissionDenied ("active worker role required"), NotFound, or ProjectNotActive (D1)."""

    async def gate_project(self, project_id: str) -> Project | None:
        """The project the client-version gate checks (no status check), or None."""
        ...

    async def worker_gate(
        self, token: str, project_id: str
    ) -> tuple[Principal | None, Project | None]:
        """``principal_for_token(token)`` and ``gate_project(project_id)`` in one read, for the
        gate of spec §1.6 (which then checks in its own order). The project is looked up only
        when ``project_id`` is an ID (else None)."""
        ...

    async def gated_claim(
        self, token: str, project_id: str, client_version: str, request: ClaimRequest
    ) -> Gated[ClaimResult]:
        """``worker_gate`` then, only when :func:`hq_domain.worker.gate_passes`, ``claim`` for
        the token's user (raising what it raises): the result is None exactly when the gate
        does not pass, and the project is None when it does (:data:`Gated`). One round trip on
        the PostgreSQL adapter for small batches."""
        ...

    async def gated_complete(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[CompleteItem],
    ) -> Gated[list[ItemResult]]:
        """As ``gated_claim``, for ``complete``."""
        ...

    async def gated_fail(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        items: Sequence[FailItem],
    ) -> Gated[list[ItemResult]]:
        """As ``gated_claim``, for ``fail``."""
        ...

    async def gated_extend_lease(
        self, token: str, project_id: str, client_version: str, worker_id: str,
        extend_seconds: int, items: Sequence[AttemptRef],
    ) -> Gated[list[ItemResult]]:
        """As ``gated_claim``, for ``extend_lease``."""
        ...

    async def policy(self, user_id: str, project_id: str) -> Project: ...

    async def claim(self, user_id: str, project_id: str, request: ClaimRequest) -> ClaimResult:
        """Spec §2.4 in one transaction. Raises ProjectDispatchRateLimited (429) after
        committing the sweep and bucket when tokens are short and matching work exists."""
        ...

    async def complete(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[CompleteItem]
    ) -> list[ItemResult]: ...

    async def fail(
        self, user_id: str, project_id: str, worker_id: str, items: Sequence[FailItem]
    ) -> list[ItemResult]: ...

    async def extend_lease(
        self,
        user_id: str,
        project_id: str,
        worker_id: str,
        extend_seconds: int,
        items: Sequence[AttemptRef],
    ) -> list[ItemResult]: ...


class ProjectsPort(Protocol):
    """Projects and their jobs, as the administration sees them."""

    async def list_projects(self) -> list[ProjectSummary]: ...

    async def get_project(self, project_id: str) -> ProjectSummary | None: ...

    async def put_project(self, project_id: str, put: ProjectPut) -> ProjectSummary: ...

    async def delete_project(self, project_id: str) -> None:
        """NotFound("project not found"); InvalidRequest("project has WIP jobs")."""
        ...

    async def list_jobs(
        self, project_id: str, status: JobStatus | None, after_job_id: int, limit: int
    ) -> JobPage:
        """NotFound("project not found") for an unknown project."""
        ...

    async def get_job(self, project_id: str, job_id: int) -> Job | None: ...

    async def requeue_job(self, project_id: str, job_id: int) -> None:
        """InvalidRequest("job is not failed or reset_exhausted") unless failed/exhausted."""
        ...

    async def delete_job(self, project_id: str, job_id: int) -> None:
        """InvalidRequest("job not found or is WIP")."""
        ...


class EarlierCommitFailed(Exception):
    """An earlier call in a :class:`CommitTurn` line did not commit, so this one must not."""


class CommitTurn(Protocol):
    """A place in a line of concurrent :meth:`EnqueuePort.enqueue_batches` calls (a source
    import's connections): the calls number their jobs and commit in line order, so job ids
    follow the file (FIFO claims order by them) and a failure leaves exactly the calls before
    it committed. The line's owner settles each place when its call returns or raises."""

    async def ids_turn(self) -> None:
        """Return once every earlier call has taken its job ids."""
        ...

    def ids_taken(self) -> None:
        """This call has taken its job ids (or will take none)."""
        ...

    async def commit_turn(self) -> None:
        """Return once every earlier call has committed; raise EarlierCommitFailed if one
        did not. Called inside the transaction, just before its commit."""
        ...


class EnqueuePort(Protocol):
    """Adding jobs (admin API, source imports, the tracker CLI)."""

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        """Insert validated jobs in one transaction; returns newly inserted rows.

        NotFound("project not found"), ProjectNotActive (archived), InvalidJob for the
        identity-mode id rules, IdentityConflict. Any error inserts nothing."""
        ...

    async def enqueue_fields(
        self, project_id: str, items: Sequence[JobFields], mode: IdentityMode
    ) -> int:
        """Exactly ``enqueue(project_id, validate_jobs(items, mode))``: the same rows and the
        same error (a job's validation error before the project's). ``mode`` is the
        project's identity mode as the caller read it (the enqueue route). A store may
        validate while it inserts; any error still inserts nothing."""
        ...

    async def enqueue_batches(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        turn: CommitTurn | None = None,
    ) -> list[int]:
        """Each batch exactly as its own :meth:`enqueue` call, in order, but all in one
        transaction (any error inserts nothing); returns the rows inserted per batch. Source
        imports commit several 1,000-job batches at once this way.

        With ``turn``, the call takes its job ids and commits in the turn's line order (see
        :class:`CommitTurn`); it may then also stop waiting for a lock after a few seconds
        (a cycle through the line's waits is invisible to the database), raising the driver's
        error: the caller redoes such a call without a turn."""
        ...


class UsersPort(Protocol):
    """Users and their machine tokens."""

    async def list_users(self) -> list[UserListItem]: ...

    async def get_user(self, user_id: str) -> User | None: ...

    async def put_user(self, user_id: str, status: UserStatus, roles: Sequence[Role]) -> None: ...

    async def delete_user(self, user_id: str) -> None:
        """NotFound("user not found")."""
        ...

    async def get_machine_token(self, user_id: str) -> str | None:
        """The current plaintext of an active (non-revoked) token, else None."""
        ...

    async def set_machine_token(self, user_id: str, token: str) -> None:
        """Install ``token`` as the user's only, un-revoked token. NotFound("user not found")."""
        ...

    async def revoke_machine_token(self, user_id: str) -> None:
        """NotFound("active machine token not found")."""
        ...

    async def bootstrap_user(self, user_id: str, roles: Sequence[Role], token: str) -> None:
        """Create or update the user as active with exactly ``roles`` and install ``token``."""
        ...


class AdminPort(ProjectsPort, EnqueuePort, UsersPort, Protocol):
    """The administration use cases (admin API, web dashboard, tracker CLI)."""


class MaintenancePort(Protocol):
    """Housekeeping run by the server's background loop (sweep) or by an operator (prune)."""

    async def sweep_expired(self, limit: int) -> int:
        """D2: reset up to ``limit`` expired WIP rows (any project); returns how many."""
        ...

    async def prune_claim_buckets(self, before_ms: int) -> int:
        """Delete the claim-audit bucket rows that started before ``before_ms`` (every
        project; one project at a time on PostgreSQL, so no statement holds many locks);
        returns how many were deleted."""
        ...


class MonitorPort(Protocol):
    """The operators' monitor (``tracker monitor``). Its figures come from the same reads as
    the dashboard's and ``/metrics``: job counts as :meth:`AdminPort.list_projects`, queue
    health as :meth:`ObservePort.queue_health`, history as :meth:`ObservePort.all_history`."""

    async def monitor_snapshot(self, window_s: int, bucket_window_s: int) -> MonitorSnapshot:
        """Every project's figures and the worker claim rates in one consistent read (one
        read-only repeatable-read transaction on PostgreSQL), at the clock's now: finished
        counts over the last ``window_s``, claim buckets that started in the last
        ``bucket_window_s``, history over :data:`hq_domain.progress.RATE_WINDOW_S`."""
        ...


class ObservePort(Protocol):
    """Readiness, progress history, failures and worker activity (issue 14). Nothing here runs
    on the worker request path; ``record_history`` is the background loop's job."""

    async def ping(self, timeout_s: float) -> None:
        """Run what every worker request starts with (PostgreSQL: the token and project gate
        through the request pool) and return, or raise when that path is broken. The caller
        (``/readyz``) abandons it after ``timeout_s``; an adapter may also stop it then."""
        ...

    async def fold_counts(self) -> int:
        """Fold pending job-count deltas into the totals (PostgreSQL, migration 0004; counts
        are exact before and after, folding keeps reads cheap). Returns total rows written;
        the memory adapter has nothing to fold."""
        ...

    async def record_history(self) -> int:
        """Snapshot every project's counts into the current minute and apply the retention
        of :mod:`hq_domain.progress`; returns the projects recorded."""
        ...

    async def project_history(self, project_id: str, since_s: int) -> list[HistoryPoint]:
        """Snapshots at or after ``since_s``, oldest first (empty for an unknown project)."""
        ...

    async def all_history(self, since_s: int) -> dict[str, list[HistoryPoint]]: ...

    async def recent_failures(self, project_id: str, sample: int) -> list[FailureGroup]:
        """The newest ``sample`` failed and ``sample`` reset_exhausted jobs, grouped by code."""
        ...

    async def worker_activity(
        self, project_id: str | None, since_s: int
    ) -> list[WorkerActivity]:
        """Workers that claimed, hold jobs or reported results since ``since_s`` (of one
        project or all), newest first."""
        ...

    async def queue_health(self) -> dict[str, tuple[int | None, int]]:
        """Per project: (enqueue time of the oldest todo job or None, expired unswept leases)."""
        ...

    async def record_worker_minutes(self, tallies: Tallies) -> int:
        """Add one process's drained :class:`~hq_domain.worker_tally.WorkerTally` (jobs done
        and failed per project and worker) to the current minute, skipping projects that are
        gone, and drop minutes older than ``WORKER_MINUTE_RETENTION_S``; returns the rows
        written. ``worker_activity`` reports the sums over its window."""
        ...


class WebPort(Protocol):
    """Browser sessions, GitHub sign-in and the worker→user mapping (spec §5)."""

    async def create_session(self, digest: bytes, user_id: str, expires_at: int) -> None:
        """Store a session digest; also deletes expired session rows."""
        ...

    async def session_user(self, digest: bytes) -> User | None:
        """The active user of a live session, else None."""
        ...

    async def delete_session(self, digest: bytes) -> None: ...

    async def upsert_github_admin(
        self, github_user_id: int, login: str, avatar_url: str
    ) -> User: ...

    async def upsert_github_worker(
        self, github_user_id: int, login: str, avatar_url: str
    ) -> User: ...

    async def list_worker_mappings(
        self, worker_id: str | None, limit: int
    ) -> list[WorkerMapping]: ...


class Store(
    AuthPort, WorkerPort, AdminPort, MaintenancePort, MonitorPort, ObservePort, WebPort, Protocol
):
    """Everything one adapter provides. Apps depend on the narrower ports where they can."""

    async def close(self) -> None: ...
