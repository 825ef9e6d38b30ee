"""Streaming import of a ``jobs-jsonl-zstd-v1`` source into a project (spec §1.7.5, §4.1).

Shared by ``tracker enqueue-source`` (local file straight into the store) and the HTTP upload
route. Decoding runs in a worker thread one batch ahead of the store; each 1,000-job batch is its own
``store.enqueue`` transaction on the caller's event loop, so a failure leaves earlier batches
committed. The error then says how many jobs were imported before it.
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
TRACKER_MAX_JOBS = 100_000_000
TRACKER_MAX_UNCOMPRESSED = 1 << 40

SourceInput = str | os.PathLike[str] | BinaryIO | AsyncIterable[bytes]


class Enqueuer(Protocol):
    """The one store method an import needs (``hq_domain.ports.AdminPort.enqueue``)."""

    async def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> int: ...


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
    imported = inserted = 0
    batch_lines: tuple[int, int] | None = None

    async def drain() -> None:
        # Decode the next batch in a worker thread while the store inserts the current one.
        nonlocal imported, inserted, batch_lines
        pending = asyncio.ensure_future(asyncio.to_thread(decoder.next_batch))
        while (batch := await pending) is not None:
            pending = asyncio.ensure_future(asyncio.to_thread(decoder.next_batch))
            batch_lines = (imported + 1, imported + len(batch))
            try:
                inserted += await store.enqueue(project_id, batch)
            except BaseException:
                # The store's error wins; let the in-flight decode finish first.
                await asyncio.gather(pending, return_exceptions=True)
                raise
            imported += len(batch)
            batch_lines = None

    try:
        async for chunk in chunks:
            decoder.push(chunk)
            await drain()
            if not decoder.wants_input:
                break
        decoder.end()
        await drain()
    except HqError as exc:
        raise SourceImportFailed(exc, imported, inserted, batch_lines) from exc
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
