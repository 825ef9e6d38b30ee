"""ProjectsPort over PostgreSQL: projects and admin job operations (spec §1.7.1–1.7.8)."""

from __future__ import annotations

from hq_adapters.postgres import rows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_domain.errors import InvalidRequest, NotFound
from hq_domain.jobs import Job, JobStatus
from hq_domain.ports import JobPage
from hq_domain.projects import ClaimOrder, ProjectPut, ProjectSummary, apply_put


class PostgresProjects:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def list_projects(self) -> list[ProjectSummary]:
        return [rows.summary(r) for r in await self._db.fetch("list_projects")]

    async def get_project(self, project_id: str) -> ProjectSummary | None:
        r = await self._db.fetchrow("get_project_summary", project_id)
        return None if r is None else rows.summary(r)

    async def put_project(self, project_id: str, put: ProjectPut) -> ProjectSummary:
        async with self._db.transaction() as conn:
            found = await conn.fetchrow(q("lock_project"), project_id)
            existing = None if found is None else rows.project(found)
            updated = apply_put(project_id, existing, put, self._db.now_s())
            if (
                existing is not None
                and existing.claim_order is not ClaimOrder.RANDOM
                and updated.claim_order is ClaimOrder.RANDOM
            ):
                await conn.execute(q("lock_project_from_enqueues"), project_id)
                await conn.execute(q("join_random_queue"), project_id)
            await conn.execute(q("upsert_project"), *rows.project_params(updated))
            r = await conn.fetchrow(q("get_project_summary"), project_id)
        return rows.summary(r)

    async def delete_project(self, project_id: str) -> None:
        async with self._db.transaction() as conn:
            if await conn.fetchrow(q("lock_project"), project_id) is None:
                raise NotFound("project not found")
            if await conn.fetchval(q("project_has_wip"), project_id):
                raise InvalidRequest("project has WIP jobs")
            await conn.execute(q("delete_project"), project_id)

    async def list_jobs(
        self, project_id: str, status: JobStatus | None, after_job_id: int, limit: int
    ) -> JobPage:
        async with self._db.transaction() as conn:
            if await conn.fetchrow(q("get_project"), project_id) is None:
                raise NotFound("project not found")
            found = await conn.fetch(
                q("list_jobs"),
                project_id,
                None if status is None else JobStatus(status).value,
                after_job_id,
                limit + 1,
            )
        jobs = [rows.job(r) for r in found[:limit]]
        more = len(found) > limit
        return JobPage(jobs, jobs[-1].job_id if more and jobs else None)

    async def get_job(self, project_id: str, job_id: int) -> Job | None:
        r = await self._db.fetchrow("get_job", project_id, job_id)
        return None if r is None else rows.job(r)

    async def requeue_job(self, project_id: str, job_id: int) -> None:
        if await self._db.fetchval("requeue_job", project_id, job_id, self._db.now_s()) is None:
            raise InvalidRequest("job is not failed or reset_exhausted")

    async def delete_job(self, project_id: str, job_id: int) -> None:
        if await self._db.fetchval("delete_job", project_id, job_id) is None:
            raise InvalidRequest("job not found or is WIP")
