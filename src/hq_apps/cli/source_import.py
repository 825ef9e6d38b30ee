"""Streaming import of a ``jobs-jsonl-zstd-v1`` source into a project (spec §1.7.5, §4.1).

Shared by ``tracker enqueue-source`` (local file straight into the store) and the HTTP upload
route. Decoding runs in a worker thread one batch ahead of the store. The spec makes each
1,000-job batch its own transaction, so a failure leaves earlier batches committed; the error
then says how many jobs were imported before it and which lines the failing batch held.

To save a commit (and a WAL flush) per 1,000 jobs, up to ``GROUP_BATCHES`` decoded batches are
committed together with ``enqueue_batches`` (each batch still goes through exactly the checks of
its own enqueue). When a group fails, it is redone batch by batch, so the batches before the
failing one are committed and the failing one is named, exactly as with one transaction each.
A decode error first commits the full batches decoded before it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from hq_adapters.sourcefile import SourceDecoder, SourceLimits
from hq_domain.errors import HqError
from hq_domain.jobs import JobSpec

log = logging.getLogger(__name__)

_READ_SIZE = 1 << 20
GROUP_BATCHES = 10  # 1,000-job batches per import transaction
# Decoded jobs waiting for the store, by the estimate of :func:`_batch_bytes`: with typical
# jobs that is two groups; with 32 KiB jobs it keeps memory near the old two batches.
BUFFER_BYTES = 16 << 20


def _batch_bytes(batch: Sequence[JobSpec]) -> int:
    """A rough size of a decoded batch: its texts, attr at its 8 KiB cap, object overhead."""
    return sum(len(j.value) + len(j.via or "") + (8192 if j.attr else 0) + 200 for j in batch)
TRACKER_MAX_JOBS = 100_000_000
TRACKER_MAX_UNCOMPRESSED = 1 << 40

SourceInput = str | os.PathLike[str] | BinaryIO | AsyncIterable[bytes]


class Enqueuer(Protocol):
    """The store methods an import needs (``hq_domain.ports.AdminPort``)."""

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int: ...

    async def enqueue_batches(
        self, project_id: str, batches: Sequence[Sequence[JobSpec]]
    ) -> list[int]: ...


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
) -> ImportResult:
    """Decode ``source`` (a path, a binary reader or async byte chunks) into ``project_id``.

    Raises SourceImportFailed wrapping the HqError (format errors are InvalidJob with the
    decoder's ``source format: ...`` message). A zero-job source never touches the store.
    """
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as reader:
            return await import_source(
                store, project_id, reader, max_jobs=max_jobs, max_uncompressed=max_uncompressed
            )
    chunks = source if isinstance(source, AsyncIterable) else _file_chunks(source)
    decoder = SourceDecoder(SourceLimits(max_jobs, max_uncompressed))
    # Decoded batches, then None (end) or the decode error. At most two groups' worth of
    # batches and BUFFER_BYTES of estimated job data wait here and in the group being stored.
    ready: asyncio.Queue[list[JobSpec] | Exception | None] = asyncio.Queue(GROUP_BATCHES)
    room = asyncio.Condition()
    buffered = 0
    imported = inserted = 0
    batch_lines: tuple[int, int] | None = None

    async def put(batch: list[JobSpec]) -> None:
        nonlocal buffered
        size = _batch_bytes(batch)
        async with room:
            await room.wait_for(lambda: buffered == 0 or buffered + size <= BUFFER_BYTES)
            buffered += size
        await ready.put(batch)

    async def release(batches: list[list[JobSpec]]) -> None:
        nonlocal buffered
        async with room:
            buffered -= sum(_batch_bytes(b) for b in batches)
            room.notify_all()

    async def decode() -> None:
        # Runs concurrently with the store: decoding happens in a worker thread, so the next
        # group is being decoded while PostgreSQL inserts the current one.
        try:
            async for chunk in chunks:
                decoder.push(chunk)
                while (batch := await asyncio.to_thread(decoder.next_batch)) is not None:
                    await put(batch)
                if not decoder.wants_input:
                    break
            decoder.end()
            while (batch := await asyncio.to_thread(decoder.next_batch)) is not None:
                await put(batch)
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
                await commit(group)  # the batches before an end or error are committed first
                await release(group)
            if item is None:
                break
            if isinstance(item, Exception):
                raise item
    except HqError as exc:
        raise SourceImportFailed(exc, imported, inserted, batch_lines) from exc
    finally:
        decoding.cancel()
        await asyncio.gather(decoding, return_exceptions=True)
    return ImportResult(imported, inserted, decoder.uncompressed_bytes)


async def _enqueue_source(
    database_url: str, project_id: str, path: str, max_jobs: int, pooler: str = "none"
) -> ImportResult:
    from hq_adapters.postgres import connect
    from hq_domain.clock import SystemClock

    store = await connect(database_url, SystemClock(), pooler=pooler, min_size=1, max_size=2)
    try:
        return await import_source(
            store, project_id, path, max_jobs=max_jobs, max_uncompressed=TRACKER_MAX_UNCOMPRESSED
        )
    finally:
        await store.close()


def enqueue_source_command(
    *,
    database_url: str | None = None,
    project_id: str = "",
    input: str = "",
    max_jobs: int = TRACKER_MAX_JOBS,
    pooler: str | None = None,
) -> None:
    """Import a jobs-jsonl-zstd-v1 file straight into a project's database (no HTTP).

    Logs the job counts on stderr when done; stdout stays empty.

    Parameters
    ----------
    database_url
        PostgreSQL URL (default: $HQ_DATABASE_URL; 'tracker dev' prints it).
    project_id
        Target project.
    input
        The jobs-jsonl-zstd-v1 file.
    max_jobs
        Maximum number of jobs in the file.
    pooler
        ``none`` (direct) or ``transaction`` (default: $HQ_DATABASE_POOLER).
    """
    from hq_apps.cli.common import CliError
    from hq_apps.cli.dberrors import DATABASE_ERRORS
    from hq_domain.ids import is_id

    url = database_url or os.environ.get("HQ_DATABASE_URL", "")
    if not url:
        raise CliError("enqueue-source: --database-url or HQ_DATABASE_URL is required")
    if not is_id(project_id):
        raise CliError("enqueue-source: invalid project ID")
    if not input:
        raise CliError("enqueue-source: --input is required")
    if max_jobs < 1:
        raise CliError("enqueue-source: --max-jobs must be positive")
    try:
        mode = pooler or os.environ.get("HQ_DATABASE_POOLER", "")
        result = asyncio.run(_enqueue_source(url, project_id, input, max_jobs, mode))
    except SourceImportFailed as exc:
        raise CliError(f"enqueue-source: {exc}") from None
    except DATABASE_ERRORS:
        raise  # a refused database connection is an OSError too: not "open FILE" (dberrors)
    except OSError as exc:
        raise CliError(f"enqueue-source: open {input}: {exc.strerror or exc}") from None
    log.info(
        "source enqueued",
        extra={
            "fields": {"project_id": project_id, "jobs": result.jobs, "inserted": result.inserted}
        },
    )
