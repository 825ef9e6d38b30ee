"""``tracker enqueue-source``: a local ``jobs-jsonl-zstd-v1`` file straight into a project's
database (spec §4.1), through :mod:`hq_apps.services.source_import`."""

from __future__ import annotations

import logging
import os

from hq_apps.services.source_import import (
    TRACKER_MAX_JOBS,
    TRACKER_MAX_UNCOMPRESSED,
    ImportResult,
    SourceImportFailed,
    import_source,
)

log = logging.getLogger(__name__)


async def _enqueue_source(
    database_url: str,
    project_id: str,
    path: str,
    max_jobs: int,
    pooler: str = "none",
    connections: int = 2,
) -> ImportResult:
    from hq_adapters.postgres import connect
    from hq_domain.clock import SystemClock

    store = await connect(
        database_url, SystemClock(), pooler=pooler, min_size=1, max_size=connections
    )
    try:
        return await import_source(
            store, project_id, path, max_jobs=max_jobs,
            max_uncompressed=TRACKER_MAX_UNCOMPRESSED, connections=connections,
        )  # fmt: skip
    finally:
        await store.close()


def enqueue_source_command(
    *,
    database_url: str | None = None,
    project_id: str = "",
    input: str = "",
    max_jobs: int = TRACKER_MAX_JOBS,
    pooler: str | None = None,
    connections: int = 2,
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
    connections
        Database connections inserting at once (1-16). Jobs still take ids and commit in file
        order; 2 uses a second PostgreSQL core, which is where a one-connection import waits.
    """
    from hq_apps.cli.common import CliError
    from hq_apps.cli.dberrors import DATABASE_ERRORS
    from hq_apps.collector import bulk_collection
    from hq_apps.wiring import run_fast
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
    if not 1 <= connections <= 16:
        raise CliError("enqueue-source: --connections must be between 1 and 16")
    try:
        mode = pooler or os.environ.get("HQ_DATABASE_POOLER", "")
        with bulk_collection():
            result = run_fast(
                _enqueue_source(url, project_id, input, max_jobs, mode, connections)
            )
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
