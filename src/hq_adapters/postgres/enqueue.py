"""Enqueue (spec §1.7.4, §2.6): one array insert plus identity verification, one transaction."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from hq_adapters.postgres import rows
from hq_adapters.postgres.base import StoreBase
from hq_adapters.postgres.queries import q
from hq_domain.errors import NotFound
from hq_domain.identity import assign_random_key, check_stored, collapse_batch, identity_key
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode, require_enqueue_allowed
from hq_domain.validation import check_identity_id


class EnqueueMixin(StoreBase):
    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        async with self._tx() as conn:
            found = await conn.fetchrow(q("enqueue_project"), project_id)
            if found is None:
                raise NotFound("project not found")
            project = rows.project(found)
            require_enqueue_allowed(project)
            mode = project.identity_mode
            for job in jobs:
                check_identity_id(job, mode)
            batch = collapse_batch(jobs, mode)
            if not batch:
                return 0
            external = [j.id if mode is IdentityMode.EXTERNAL_ID else None for j in batch]
            digests = [
                unique_value_digest(j.value) if mode is IdentityMode.UNIQUE_VALUE else None
                for j in batch
            ]
            inserted = await conn.fetch(
                q("enqueue_insert"),
                project_id,
                external,
                [j.value for j in batch],
                digests,
                [assign_random_key(j) for j in batch],
                [rows.dump(j.spec_fields()) for j in batch],
                self._now_s(),
            )
            if mode is not IdentityMode.NONE and len(inserted) < len(batch):
                await self._verify_existing(conn, project_id, mode, batch, inserted)
            return len(inserted)

    async def _verify_existing(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        mode: IdentityMode,
        batch: list[JobSpec],
        inserted: list[asyncpg.Record],
    ) -> None:
        """Every identity that was not inserted must match the stored row (else conflict)."""
        if mode is IdentityMode.EXTERNAL_ID:
            new = {r["external_id"] for r in inserted}
            pending: dict[str | bytes | None, JobSpec] = {
                j.id: j for j in batch if j.id not in new
            }
            stored = await conn.fetch(
                q("enqueue_existing_by_external_id"), project_id, list(pending)
            )
            key_col = "external_id"
        else:
            new = {bytes(r["unique_value_digest"]) for r in inserted}
            pending = {}
            for j in batch:
                key = identity_key(j, mode)
                if key not in new:
                    pending[key] = j
            stored = await conn.fetch(q("enqueue_existing_by_digest"), project_id, list(pending))
            key_col = "unique_value_digest"
        for r in stored:
            key = r[key_col]
            job = pending.get(bytes(key) if isinstance(key, (bytes, memoryview)) else key)
            if job is not None:
                check_stored(mode, r["value"], rows.load(r["spec"]), job)
