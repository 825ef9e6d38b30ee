"""Enqueue (spec §1.7.4, §2.6): one statement per batch inserts the new identities and
compares the existing ones with their stored rows in SQL.

The statement is first tried without ON CONFLICT (cheaper per row); only when another
enqueue commits one of the batch's identities between our snapshot and our insert does the
unique index fire, and the transaction is retried once with the ON CONFLICT form, which
waits for and skips such rows and then re-checks them.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from hq_adapters.postgres import rows
from hq_adapters.postgres.base import StoreBase
from hq_adapters.postgres.queries import q
from hq_domain.errors import IdentityConflict, NotFound
from hq_domain.identity import DIFFERENT_SPEC, DIGEST_COLLISION, assign_random_keys, collapse_batch
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode, require_enqueue_allowed
from hq_domain.validation import check_identity_id

_EMPTY_SPEC = "{}"


def _statements(mode: IdentityMode, racing: bool) -> tuple[str, str]:
    """The insert statement (fast, or ON CONFLICT after a race) and the race re-check."""
    if mode is IdentityMode.EXTERNAL_ID:
        if racing:
            return q("enqueue_insert_external_id"), q("enqueue_conflict_external_id")
        return q("enqueue_insert_external_id_fast"), q("enqueue_conflict_external_id")
    if racing:
        return q("enqueue_insert_unique_value"), q("enqueue_conflict_unique_value")
    return q("enqueue_insert_unique_value_fast"), q("enqueue_conflict_unique_value")


def spec_json(job: JobSpec) -> str:
    """The stored ``spec`` text; most jobs carry none of its fields."""
    if job.type is None and job.via is None and not job.hops and not job.attr:
        return _EMPTY_SPEC
    return rows.dump(job.spec_fields())


class _Raced(Exception):
    """The fast statement met an identity committed concurrently (unique violation)."""


class EnqueueMixin(StoreBase):
    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        return (await self.enqueue_batches(project_id, [jobs]))[0]

    async def enqueue_batches(
        self, project_id: str, batches: Sequence[Sequence[JobSpec]]
    ) -> list[int]:
        """Enqueue each batch in order, exactly as separate :meth:`enqueue` calls would, but
        all in one transaction (all or nothing). Returns the rows inserted per batch.

        Source imports use it to commit several 1,000-job batches at once; on an error they
        redo the group batch by batch to keep per-batch commit semantics (spec §1.7.5).
        """
        try:
            return await self._enqueue_tx(project_id, batches, racing=False)
        except _Raced:
            return await self._enqueue_tx(project_id, batches, racing=True)

    async def _enqueue_tx(
        self, project_id: str, batches: Sequence[Sequence[JobSpec]], *, racing: bool
    ) -> list[int]:
        async with self._tx() as conn:
            found = await conn.fetchrow(q("enqueue_project"), project_id)
            if found is None:
                raise NotFound("project not found")
            project = rows.project(found)
            require_enqueue_allowed(project)
            mode = project.identity_mode
            out = []
            for jobs in batches:
                for job in jobs:
                    check_identity_id(job, mode)
                batch = collapse_batch(jobs, mode)
                out.append(
                    await self._insert_batch(conn, project_id, mode, batch, racing=racing)
                    if batch
                    else 0
                )
            return out

    async def _insert_batch(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        mode: IdentityMode,
        batch: list[JobSpec],
        *,
        racing: bool,
    ) -> int:
        values = [j.value for j in batch]
        keys = assign_random_keys(batch)
        specs = [spec_json(j) for j in batch]
        now = self._now_s()
        if mode is IdentityMode.NONE:
            await conn.execute(q("enqueue_insert_none"), project_id, values, keys, specs, now)
            return len(batch)
        identities: list[str | None] | list[bytes]
        if mode is IdentityMode.EXTERNAL_ID:
            identities = [j.id for j in batch]
        else:
            identities = [unique_value_digest(v) for v in values]
        insert, recheck = _statements(mode, racing)
        try:
            row = await conn.fetchrow(insert, project_id, identities, values, keys, specs, now)
        except asyncpg.UniqueViolationError as exc:
            if racing:
                raise
            # Raised past the transaction (which rolls back) before the constraint name could
            # be translated into an identity conflict.
            raise _Raced from exc
        assert row is not None
        inserted: int = row["inserted"]
        conflict = row["conflict"]
        if conflict is None and inserted + row["present"] < len(batch):
            # ON CONFLICT skipped an identity committed concurrently after the statement's
            # snapshot: compare it now that it is visible.
            conflict = await conn.fetchval(recheck, project_id, identities, values, specs)
        if conflict is not None:
            raise IdentityConflict(
                DIGEST_COLLISION
                if conflict == "value" and mode is IdentityMode.UNIQUE_VALUE
                else DIFFERENT_SPEC
            )
        return inserted
