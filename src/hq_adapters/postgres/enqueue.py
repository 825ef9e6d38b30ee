"""Enqueue (spec §1.7.4, §2.6).

Two ways in. The plain one COPYs the collapsed batches and checks nothing: it is the cheapest
(no identity lookups, no speculative insertion, multi-row heap writes) and right whenever every
identity is new, which the unique indexes prove by not firing. When they do fire (a re-run, a
resubmitted batch, or another enqueue committing the same identity meanwhile), the
transaction is redone with the checking statements: one unique-index probe per identity
that also compares the found rows with their stored value and spec in SQL (so existing rows
are never shipped to Python), and, unless every identity was found equal, the insert of the
missing ones with ON CONFLICT DO NOTHING.

A per-project hint remembers that the last batch met existing identities, so a re-run pays
the failed plain attempt once, not per batch; a checked batch that finds none clears it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Sequence, Set

import asyncpg
import msgspec

from hq_adapters.postgres import rows
from hq_adapters.postgres.copy_rows import CopyRows
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.queries import q
from hq_domain.errors import HqError, IdentityConflict, NotFound
from hq_domain.identity import DIFFERENT_SPEC, DIGEST_COLLISION, assign_random_keys, collapse_batch
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.ports import CommitTurn
from hq_domain.projects import ClaimOrder, IdentityMode, Project, require_enqueue_allowed
from hq_domain.validation import JobFields, check_identity_ids, validate_jobs

_EMPTY_SPEC = "{}"
# Rows per piece of the plain insert's COPY data (about 20 KB of typical jobs).
_CHUNK_ROWS = 200
_MAX_HINTS = 10_000
_JSON = msgspec.json.Encoder()


def _json(items: list[str] | list[int]) -> str:
    return _JSON.encode(items).decode()


def spec_json(job: JobSpec) -> str:
    """The stored ``spec`` text; most jobs carry none of its fields."""
    if job.type is None and job.via is None and not job.hops and not job.attr:
        return _EMPTY_SPEC
    return rows.dump(job.spec_fields())


def _conflict(found: str, mode: IdentityMode) -> IdentityConflict:
    """The error for a checking statement's ``conflict`` ('value' or 'spec')."""
    collision = found == "value" and mode is IdentityMode.UNIQUE_VALUE
    return IdentityConflict(DIGEST_COLLISION if collision else DIFFERENT_SPEC)


class _IdentityExists(Exception):
    """The plain insert met an existing identity: redo the transaction with checks."""


class PostgresEnqueue:
    """The enqueue half of AdminPort (``enqueue``, ``enqueue_batches``)."""

    def __init__(self, db: Database, *, existing_identity_hints: Iterable[str] = ()) -> None:
        """``existing_identity_hints``: projects whose next enqueue goes straight to the
        checking statement (tests use it to run that statement first)."""
        self._db = db
        # Projects whose last enqueued batch met existing identities (see the module doc).
        self._existing_identities: set[str] = set(existing_identity_hints)

    @property
    def existing_identity_hints(self) -> Set[str]:
        """The projects whose next enqueue starts with the checking statement (read-only)."""
        return frozenset(self._existing_identities)

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int:
        return (await self.enqueue_batches(project_id, [jobs]))[0]

    async def enqueue_fields(
        self, project_id: str, items: Sequence[JobFields], mode: IdentityMode
    ) -> int:
        """``enqueue(project_id, validate_jobs(items, mode))``, with the same rows and error.

        In ``none`` mode no job's validity depends on another's and nothing is collapsed, so
        the jobs are validated :data:`_CHUNK_ROWS` at a time as the COPY sends them: PostgreSQL
        inserts the first rows while the rest are checked. Validating all of them first kept
        about a tenth of an enqueue request (0.8 ms per 1,000 jobs) before the first row went
        out. An invalid job ends the COPY early and its error is raised after it, so the
        transaction rolls back and inserts nothing (no CopyFail, hence no cancel request).
        The identity modes validate first, as :meth:`enqueue`'s callers do."""
        if mode is not IdentityMode.NONE:
            return await self.enqueue(project_id, validate_jobs(items, mode))
        async with self._db.transaction() as conn:
            try:
                project = await self._locked_project(conn, project_id)
            except HqError:
                validate_jobs(items, mode)  # a job's error comes first, as it would have
                raise
            if project.identity_mode is IdentityMode.NONE:
                random_queue = project.claim_order is ClaimOrder.RANDOM
                return await self._copy_validating(conn, project_id, random_queue, items)
        # The project was deleted and made again in another mode since the caller read it.
        return await self.enqueue(project_id, validate_jobs(items, mode))

    async def _copy_validating(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        random_queue: bool,
        items: Sequence[JobFields],
    ) -> int:
        """:meth:`_copy_plain` of one ``none``-mode batch, validated piece by piece."""
        invalid: list[HqError] = []

        def pieces() -> Iterator[tuple[Sequence[JobSpec], None]]:
            for at in range(0, len(items), _CHUNK_ROWS):
                try:
                    piece = validate_jobs(items[at : at + _CHUNK_ROWS], IdentityMode.NONE)
                except HqError as exc:
                    invalid.append(exc)
                    return
                yield piece, None

        await self._copy(conn, project_id, IdentityMode.NONE, random_queue, pieces(), False)
        if invalid:
            raise invalid[0]
        return len(items)

    async def enqueue_batches(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        turn: CommitTurn | None = None,
    ) -> list[int]:
        """Enqueue each batch in order, exactly as separate :meth:`enqueue` calls would, but
        all in one transaction (all or nothing). Returns the rows inserted per batch.

        Source imports use it to commit several 1,000-job batches at once; on an error they
        redo the group batch by batch to keep per-batch commit semantics (spec §1.7.5). With
        a ``turn`` (an import on several connections), the ids are reserved in the turn's
        order before the transaction (a redone transaction reuses them) and the commit waits
        for the earlier calls'.
        """
        ids = None if turn is None else await self._reserve_ids(turn, batches)
        hints = self._existing_identities
        if project_id not in hints:
            try:
                return await self._enqueue_tx(project_id, batches, hints, ids, turn, checked=False)
            except _IdentityExists:
                pass
        return await self._enqueue_tx(project_id, batches, hints, ids, turn, checked=True)

    async def _reserve_ids(
        self, turn: CommitTurn, batches: Sequence[Sequence[JobSpec]]
    ) -> list[list[int]]:
        """Ascending job ids for every job of ``batches`` (one list per batch; a collapsed
        batch uses the first of its own), reserved after the earlier turns reserved theirs."""
        await turn.ids_turn()
        try:
            flat: list[int] = await self._db.fetchval(
                "reserve_job_ids", sum(len(jobs) for jobs in batches)
            )
        finally:
            turn.ids_taken()
        out, start = [], 0
        for jobs in batches:
            out.append(flat[start : start + len(jobs)])
            start += len(jobs)
        return out

    async def _enqueue_tx(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        hints: set[str],
        ids: list[list[int]] | None,
        turn: CommitTurn | None,
        *,
        checked: bool,
    ) -> list[int]:
        async with self._db.transaction() as conn:
            if turn is not None:
                await conn.execute(q("enqueue_lock_timeout"))
            out = await self._enqueue_in(conn, project_id, batches, hints, ids, checked=checked)
            if turn is not None:
                await turn.commit_turn()
            return out

    async def _enqueue_in(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        hints: set[str],
        ids: list[list[int]] | None,
        *,
        checked: bool,
    ) -> list[int]:
        """The transaction's work: the project's checks, then the plain or checking insert."""
        project = await self._locked_project(conn, project_id)
        mode = project.identity_mode
        # Only a random project's rows enter the random claim index (migration 0016); the
        # row lock above keeps a switch to random from committing before this transaction.
        random_queue = project.claim_order is ClaimOrder.RANDOM
        if mode is IdentityMode.NONE:
            checked = False  # nothing to check, nothing can exist
        if not checked:
            return await self._copy_plain(
                conn, project_id, mode, random_queue, batches, hints, ids
            )
        out = []
        for n, jobs in enumerate(batches):
            batch = self._collapsed(jobs, mode)
            batch_ids = None if ids is None else ids[n][: len(batch)]
            out.append(
                await self._insert_checked(
                    conn, project_id, mode, random_queue, batch, hints, batch_ids
                )
                if batch
                else 0
            )
        return out

    @staticmethod
    async def _locked_project(conn: asyncpg.Connection, project_id: str) -> Project:
        """The target project under ``enqueue_project``'s lock, if it takes jobs."""
        found = await conn.fetchrow(q("enqueue_project"), project_id)
        if found is None:
            raise NotFound("project not found")
        project = rows.project(found)
        require_enqueue_allowed(project)
        return project

    @staticmethod
    def _collapsed(jobs: Sequence[JobSpec], mode: IdentityMode) -> list[JobSpec]:
        check_identity_ids(jobs, mode)
        return collapse_batch(jobs, mode)

    @staticmethod
    def _json_arrays(mode: IdentityMode, batch: list[JobSpec]) -> tuple[str, str, str]:
        """The checking statements' parameters: identities (ids, or value digests in hex),
        values and specs, each a JSON array (see enqueue.sql for why)."""
        values = [j.value for j in batch]
        if mode is IdentityMode.EXTERNAL_ID:
            identities: list[str] = [j.id for j in batch]  # type: ignore[misc]
        else:
            identities = [unique_value_digest(v).hex() for v in values]
        return _json(identities), _json(values), _json([spec_json(j) for j in batch])

    async def _copy_plain(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        mode: IdentityMode,
        random_queue: bool,
        batches: Sequence[Sequence[JobSpec]],
        hints: set[str],
        ids: list[list[int]] | None,
    ) -> list[int]:
        """Every collapsed batch, in order, as one binary COPY: no identity checks (the unique
        indexes raise if one exists, and the transaction is redone with the checking
        statement). COPY inserts the rows in order (job_id follows submission order, or
        takes the reserved ``ids``), in multi-row heap writes.

        The rows are encoded (:class:`~hq_adapters.postgres.copy_rows.CopyRows`) and sent
        :data:`_CHUNK_ROWS` at a time, so PostgreSQL parses and inserts the first rows while
        the next ones are being encoded here."""
        collapsed = [self._collapsed(jobs, mode) for jobs in batches]
        out = [len(batch) for batch in collapsed]
        if not any(out):
            return out

        def pieces() -> Iterator[tuple[Sequence[JobSpec], Sequence[int] | None]]:
            for n, batch in enumerate(collapsed):
                own = None if ids is None else ids[n]
                for at in range(0, len(batch), _CHUNK_ROWS):
                    end = at + _CHUNK_ROWS
                    yield batch[at:end], None if own is None else own[at:end]

        try:
            await self._copy(conn, project_id, mode, random_queue, pieces(), ids is not None)
        except asyncpg.UniqueViolationError as exc:
            if len(hints) >= _MAX_HINTS:
                hints.clear()
            hints.add(project_id)
            # Raised past the transaction (which rolls back) before the constraint name
            # could be translated into an identity conflict.
            raise _IdentityExists from exc
        return out

    async def _copy(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        mode: IdentityMode,
        random_queue: bool,
        pieces: Iterator[tuple[Sequence[JobSpec], Sequence[int] | None]],
        with_ids: bool,
    ) -> None:
        """One binary COPY of ``pieces`` (rows, and their reserved job ids exactly when
        ``with_ids``), each encoded (:class:`~hq_adapters.postgres.copy_rows.CopyRows`) and sent
        as it is taken from ``pieces``."""
        rows = CopyRows(
            project_id, self._db.now_s(), random_queue, with_ids=with_ids,
            spec_json=spec_json, empty_spec=_EMPTY_SPEC,
        )  # fmt: skip

        async def data() -> AsyncIterator[bytes]:
            for piece, ids in pieces:
                rows.add(piece, mode, ids)
                yield rows.take()
            yield rows.finish()

        await conn.copy_to_table(
            "tracker_jobs", source=data(), columns=rows.columns, format="binary"
        )

    async def _insert_checked(
        self,
        conn: asyncpg.Connection,
        project_id: str,
        mode: IdentityMode,
        random_queue: bool,
        batch: list[JobSpec],
        hints: set[str],
        ids: list[int] | None,
    ) -> int:
        identities, values, specs = self._json_arrays(mode, batch)
        if mode is IdentityMode.EXTERNAL_ID:
            present = q("enqueue_present_external_id")
            insert, recheck = q("enqueue_insert_external_id"), q("enqueue_conflict_external_id")
        else:
            present = q("enqueue_present_unique_value")
            insert, recheck = q("enqueue_insert_unique_value"), q("enqueue_conflict_unique_value")
        # A batch that is all there already (every batch of a re-run) ends with the probe.
        found = await conn.fetchrow(present, project_id, identities, values, specs)
        assert found is not None
        if found["conflict"] is not None:
            raise _conflict(found["conflict"], mode)
        if found["present"] == len(batch):
            return 0
        row = await conn.fetchrow(
            insert, project_id, identities, values, _json(assign_random_keys(batch)), specs,
            self._db.now_s(), None if ids is None else _json(ids), random_queue,
        )  # fmt: skip
        assert row is not None
        inserted: int = row["inserted"]
        conflict = row["conflict"]
        if conflict is None and inserted + row["present"] < len(batch):
            # ON CONFLICT skipped an identity committed concurrently after the statement's
            # snapshot: compare it now that it is visible.
            conflict = await conn.fetchval(recheck, project_id, identities, values, specs)
        if conflict is not None:
            raise _conflict(conflict, mode)
        if row["present"] == 0:
            hints.discard(project_id)  # the next call may try the plain insert again
        return inserted
