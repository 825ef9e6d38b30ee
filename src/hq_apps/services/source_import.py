"""Streaming import of a ``jobs-jsonl-zstd-v1`` source into a project (spec §1.7.5, §4.1).

The one import used by ``tracker enqueue-source`` (a local file straight into the store), the
API's route 8 and the dashboard's upload form (both through :func:`import_upload`, with the
upload limits). Decoding runs in a worker thread one batch ahead of the store. The spec makes
each 1,000-job batch its own transaction, so a failure leaves earlier batches committed; the
error then says how many jobs were imported before it and which lines the failing batch held.

To save a commit (and a WAL flush) per 1,000 jobs, up to ``GROUP_BATCHES`` decoded batches are
committed together with ``enqueue_batches`` (each batch still goes through exactly the checks of
its own enqueue). When a group fails, it is redone batch by batch, so the batches before the
failing one are committed and the failing one is named, exactly as with one transaction each.
A decode error first commits the full batches decoded before it.

With ``connections`` > 1 (``tracker enqueue-source``), that many groups are stored at once, each
on its own connection: one PostgreSQL backend inserting was the import's bottleneck. The groups
form a commit line (:class:`~hq_domain.ports.CommitTurn`): each reserves its job ids after the
group before it did, so ids follow the file as FIFO claims expect, and commits only after that
group committed, so a failure still leaves exactly the groups before it committed. A group that
repeats an identity of a group still in flight waits for it to land (two transactions inserting
the same identity would wait on each other's rows while the later one waits for the earlier
one's commit). When a group fails in the line, the groups after it roll back and all are redone
one at a time without the line, which reports the failing batch as above.

A failure is a :class:`SourceFileInvalid` (the source did not decode: a
:class:`~hq_domain.errors.SourceFormatError`) or a :class:`SourceImportRejected` (the store
refused a batch: unknown or archived project, identity rules or conflicts).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from hq_adapters.sourcefile import SourceDecoder, SourceLimits
from hq_domain.errors import HqError, SourceFormatError
from hq_domain.jobs import JobSpec
from hq_domain.ports import CommitTurn, EarlierCommitFailed

_READ_SIZE = 1 << 20
GROUP_BATCHES = 10  # 1,000-job batches per import transaction
# Decoded jobs waiting for the store, by the estimate of :func:`_batch_bytes`: with typical
# jobs that is two groups; with 32 KiB jobs it keeps memory near the old two batches.
BUFFER_BYTES = 16 << 20


# Limits of an upload (route 8 and the dashboard, spec §1.7.5): compressed body,
# uncompressed stream, jobs.
UPLOAD_MAX_COMPRESSED_BYTES = 256 << 20
UPLOAD_LIMITS = SourceLimits(max_jobs=10_000_000, max_uncompressed=4 << 30)
# ``tracker enqueue-source`` reads a local file: its default job limit is the --max-jobs flag's.
TRACKER_MAX_JOBS = 100_000_000
TRACKER_MAX_UNCOMPRESSED = 1 << 40


def _batch_bytes(batch: Sequence[JobSpec]) -> int:
    """A rough size of a decoded batch: its texts, attr at its 8 KiB cap, object overhead."""
    return sum(len(j.value) + len(j.via or "") + (8192 if j.attr else 0) + 200 for j in batch)


def _next_sized(decoder: SourceDecoder) -> tuple[list[JobSpec], int] | None:
    """The decoder's next batch and its :func:`_batch_bytes`, both in the decoding thread."""
    batch = decoder.next_batch()
    return None if batch is None else (batch, _batch_bytes(batch))


SourceInput = str | os.PathLike[str] | BinaryIO | AsyncIterable[bytes]


class Enqueuer(Protocol):
    """The store methods an import needs (``hq_domain.ports.AdminPort``)."""

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int: ...

    async def enqueue_batches(
        self,
        project_id: str,
        batches: Sequence[Sequence[JobSpec]],
        turn: CommitTurn | None = None,
    ) -> list[int]: ...


class _Turn:
    """A group's place in the commit line (:class:`~hq_domain.ports.CommitTurn`), settled by
    :func:`_stored` when its ``enqueue_batches`` call ends."""

    __slots__ = ("_before", "_done", "_ids")

    def __init__(self, before: _Turn | None) -> None:
        self._before = before
        self._ids = asyncio.Event()
        self._done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def ids_turn(self) -> None:
        if self._before is not None:
            await self._before._ids.wait()

    def ids_taken(self) -> None:
        self._ids.set()

    async def commit_turn(self) -> None:
        if self._before is not None and not await asyncio.shield(self._before._done):
            raise EarlierCommitFailed

    def settle(self, committed: bool) -> None:
        self._ids.set()
        if not self._done.done():
            self._done.set_result(committed)
        self._before = None  # the line needs no memory of landed groups


async def _stored(
    store: Enqueuer, project_id: str, group: list[list[JobSpec]], turn: _Turn
) -> list[int]:
    try:
        counts = await store.enqueue_batches(project_id, group, turn)
    except BaseException:
        turn.settle(False)
        raise
    turn.settle(True)
    return counts


@dataclass(slots=True)
class _Flight:
    """A group being stored in the commit line."""

    group: list[list[JobSpec]]
    identities: set[str]
    turn: _Turn
    task: asyncio.Future[list[int]]


def _identities(group: list[list[JobSpec]]) -> set[str]:
    """The group's job ids, or values where a job has none (unique_value identities): two
    groups sharing one must not be in flight together."""
    return {j.id if j.id is not None else j.value for batch in group for j in batch}


@dataclass(frozen=True, slots=True)
class ImportResult:
    jobs: int
    inserted: int
    uncompressed_bytes: int


class SourceImportFailed(Exception):
    """A source import stopped by ``error`` after ``imported_jobs`` jobs (``inserted`` of them
    new) had been committed in earlier batches."""

    def __init__(
        self, error: HqError, imported_jobs: int, inserted: int, batch_lines: tuple[int, int] | None
    ) -> None:
        where = f" in the batch of lines {batch_lines[0]}-{batch_lines[1]}" if batch_lines else ""
        super().__init__(
            f"{error.message}{where} (imported_jobs={imported_jobs} inserted={inserted} before it)"
        )
        self.error = error
        self.imported_jobs = imported_jobs
        self.inserted = inserted
        self.batch_lines = batch_lines

    @staticmethod
    def of(
        error: HqError, imported_jobs: int, inserted: int, batch_lines: tuple[int, int] | None
    ) -> SourceImportFailed:
        """The failure class for ``error``: a format error means the file is invalid."""
        kind = SourceFileInvalid if isinstance(error, SourceFormatError) else SourceImportRejected
        return kind(error, imported_jobs, inserted, batch_lines)


class SourceFileInvalid(SourceImportFailed):
    """The source did not decode (``error`` is a :class:`~hq_domain.errors.SourceFormatError`)."""


class SourceImportRejected(SourceImportFailed):
    """The store refused a batch of a well-formed source."""


async def _file_chunks(reader: BinaryIO) -> AsyncIterator[bytes]:
    while chunk := await asyncio.to_thread(reader.read, _READ_SIZE):
        yield chunk


async def import_source(
    store: Enqueuer,
    project_id: str,
    source: SourceInput,
    *,
    max_jobs: int,
    max_uncompressed: int,
    connections: int = 1,
) -> ImportResult:
    """Decode ``source`` (a path, a binary reader or async byte chunks) into ``project_id``,
    storing up to ``connections`` groups at once (the module doc).

    Raises SourceFileInvalid or SourceImportRejected wrapping the HqError (format errors are
    SourceFormatError, ``source format: ...``). A zero-job source never touches the store.
    """
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as reader:
            return await import_source(
                store, project_id, reader, max_jobs=max_jobs,
                max_uncompressed=max_uncompressed, connections=connections,
            )  # fmt: skip
    chunks = source if isinstance(source, AsyncIterable) else _file_chunks(source)
    decoder = SourceDecoder(SourceLimits(max_jobs, max_uncompressed))
    # Decoded batches, then None (end) or the decode error. At most a group per connection
    # waits here (so every connection that frees up finds a full group, not what one batch's
    # decoding left), and BUFFER_BYTES of estimated job data here and in the groups being
    # stored.
    ready: asyncio.Queue[list[JobSpec] | Exception | None] = asyncio.Queue(
        GROUP_BATCHES * max(1, connections)
    )
    room = asyncio.Condition()
    # _batch_bytes of the batches in ``ready`` and in the group being stored, in queue order
    sizes: deque[int] = deque()
    imported = inserted = 0
    batch_lines: tuple[int, int] | None = None

    async def put(sized: tuple[list[JobSpec], int]) -> None:
        batch, size = sized
        async with room:
            await room.wait_for(lambda: not sizes or sum(sizes) + size <= BUFFER_BYTES)
            sizes.append(size)
        await ready.put(batch)

    async def release(batches: list[list[JobSpec]]) -> None:
        async with room:
            for _ in batches:
                sizes.popleft()
            room.notify_all()

    async def decode() -> None:
        # Runs concurrently with the store: decoding happens in a worker thread, so the next
        # group is being decoded while PostgreSQL inserts the current one.
        try:
            async for chunk in chunks:
                decoder.push(chunk)
                while (sized := await asyncio.to_thread(_next_sized, decoder)) is not None:
                    await put(sized)
                if not decoder.wants_input:
                    break
            decoder.end()
            while (sized := await asyncio.to_thread(_next_sized, decoder)) is not None:
                await put(sized)
        except Exception as exc:  # format errors, and read errors of the input
            await ready.put(exc)
            return
        await ready.put(None)

    async def commit(batches: list[list[JobSpec]]) -> None:
        nonlocal imported, inserted, batch_lines
        if len(batches) > 1:
            try:
                counts = await store.enqueue_batches(project_id, batches)
            except HqError:
                pass  # nothing was inserted: redo one batch per transaction below
            else:
                imported += sum(len(b) for b in batches)
                inserted += sum(counts)
                return
        for batch in batches:
            batch_lines = (imported + 1, imported + len(batch))
            inserted += await store.enqueue(project_id, batch)
            imported += len(batch)
            batch_lines = None

    in_flight: deque[_Flight] = deque()  # the commit line, oldest first

    def send(group: list[list[JobSpec]], identities: set[str]) -> None:
        turn = _Turn(in_flight[-1].turn if in_flight else None)
        task = asyncio.ensure_future(_stored(store, project_id, group, turn))
        in_flight.append(_Flight(group, identities, turn, task))

    async def land() -> None:
        """Wait for the oldest group in flight; if it failed, redo it and the rest (which
        then cannot commit) one at a time, outside the line."""
        nonlocal imported, inserted
        head = in_flight.popleft()
        try:
            counts = await head.task
        except Exception:
            rest = list(in_flight)
            in_flight.clear()
            await asyncio.gather(*(f.task for f in rest), return_exceptions=True)
            for group in [head.group, *(f.group for f in rest)]:
                await commit(group)
                await release(group)
            return
        imported += sum(len(b) for b in head.group)
        inserted += sum(counts)
        await release(head.group)

    async def store_group(group: list[list[JobSpec]]) -> None:
        if connections <= 1:
            await commit(group)
            await release(group)
            return
        identities = _identities(group)
        while in_flight and (
            len(in_flight) >= connections
            or any(not identities.isdisjoint(f.identities) for f in in_flight)
        ):
            await land()
        send(group, identities)

    decoding = asyncio.ensure_future(decode())
    try:
        while True:
            # Whatever is decoded (at least one item, at most a group) goes in one transaction.
            group: list[list[JobSpec]] = []
            item = await ready.get()
            while isinstance(item, list):
                group.append(item)
                if len(group) >= GROUP_BATCHES or ready.empty():
                    break
                item = ready.get_nowait()
            if group:
                await store_group(group)
            if item is not None and not isinstance(item, Exception):
                continue
            while in_flight:  # the batches before an end or error are committed first
                await land()
            if item is None:
                break
            raise item
    except HqError as exc:
        raise SourceImportFailed.of(exc, imported, inserted, batch_lines) from exc
    finally:
        decoding.cancel()
        for flight in in_flight:
            flight.task.cancel()
        await asyncio.gather(decoding, *(f.task for f in in_flight), return_exceptions=True)
    return ImportResult(imported, inserted, decoder.uncompressed_bytes)


async def import_upload(store: Enqueuer, project_id: str, source: SourceInput) -> ImportResult:
    """:func:`import_source` with the limits of an upload (route 8 and the dashboard); the
    caller bounds the compressed body at :data:`UPLOAD_MAX_COMPRESSED_BYTES`."""
    return await import_source(
        store,
        project_id,
        source,
        max_jobs=UPLOAD_LIMITS.max_jobs,
        max_uncompressed=UPLOAD_LIMITS.max_uncompressed,
    )
