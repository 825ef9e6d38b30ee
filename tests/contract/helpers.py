"""Small builders shared by the contract classes (no adapter-specific code)."""

from __future__ import annotations

from typing import Any

from hq_domain.clock import ManualClock, seconds
from hq_domain.jobs import ArtifactReceipt, ExecutionError, JobSpec, Outcome
from hq_domain.ports import Store
from hq_domain.projects import ProjectPut, ProjectSummary
from hq_domain.users import Role, UserStatus
from hq_domain.worker import AttemptRef, ClaimRequest, ClaimResult, CompleteItem, FailItem

WORKER_USER = "worker-user"
WORKER = "w1"
OTHER_WORKER = "w2"


def now_s(clock: ManualClock) -> int:
    return seconds(clock.now_ns())


async def worker_user(store: Store, user_id: str = WORKER_USER) -> str:
    await store.put_user(user_id, UserStatus.ACTIVE, [Role.WORKER])
    return user_id


async def put(store: Store, project_id: str = "p1", status: str = "active", **kw: Any) -> ProjectSummary:
    return await store.put_project(project_id, ProjectPut(status=status, **kw))


def job(value: str, id: str | None = None, **kw: Any) -> JobSpec:
    return JobSpec(value=value, id=id, **kw)


def ext_jobs(*names: str, **kw: Any) -> list[JobSpec]:
    """External-id jobs whose id and value are both the given name."""
    return [JobSpec(value=n, id=n, **kw) for n in names]


def claim_req(
    max_jobs: int = 256,
    lease: int = 60,
    types: tuple[str, ...] = (),
    worker: str = WORKER,
    policy_version: int = 1,
) -> ClaimRequest:
    return ClaimRequest(worker, max_jobs, lease, types, policy_version)


async def claim(
    store: Store, project_id: str = "p1", user: str = WORKER_USER, **kw: Any
) -> ClaimResult:
    return await store.claim(user, project_id, claim_req(**kw))


OUTCOME = Outcome("success", 200, "https://example.org/x", {"k": "v"})
RECEIPT = ArtifactReceipt("r1", "issuer", "obj-1", "sha1:" + "ab" * 20, 10, 1)
ERROR = ExecutionError("boom", "it broke", {"n": 1})


def done_item(job_id: int, attempt_id: str, receipts: tuple[ArtifactReceipt, ...] | None = ()) -> CompleteItem:
    return CompleteItem(job_id, attempt_id, OUTCOME, receipts)


def fail_item(job_id: int, attempt_id: str, retryable: bool = True) -> FailItem:
    return FailItem(job_id, attempt_id, retryable, ERROR)


def ref(job_id: int, attempt_id: str) -> AttemptRef:
    return AttemptRef(job_id, attempt_id)


async def complete(store: Store, project_id: str, *items: CompleteItem, worker: str = WORKER):
    return await store.complete(WORKER_USER, project_id, worker, list(items))


async def fail(store: Store, project_id: str, *items: FailItem, worker: str = WORKER):
    return await store.fail(WORKER_USER, project_id, worker, list(items))


async def extend(store: Store, project_id: str, seconds_: int, *items: AttemptRef, worker: str = WORKER):
    return await store.extend_lease(WORKER_USER, project_id, worker, seconds_, list(items))


async def counts(store: Store, project_id: str = "p1") -> dict[str, int]:
    summary = await store.get_project(project_id)
    assert summary is not None
    return summary.job_counts.as_dict()


async def all_jobs(store: Store, project_id: str = "p1"):
    page = await store.list_jobs(project_id, None, 0, 200)
    return page.jobs
