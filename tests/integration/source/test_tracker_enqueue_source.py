"""``tracker enqueue-source`` (spec §4.1) on PostgreSQL: the command function the lead wires."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
import zstandard

from hq_adapters.postgres import connect
from hq_apps.cli.common import CliError
from hq_apps.cli.source_import import enqueue_source_command
from hq_domain.clock import SystemClock
from hq_domain.projects import ProjectPut

pytestmark = pytest.mark.postgres


def _source(n: int, start: int = 0) -> bytes:
    text = "".join(json.dumps({"value": f"https://e/{i}"}) + "\n" for i in range(start, start + n))
    return zstandard.ZstdCompressor().compress(text.encode())


async def _setup(dsn: str) -> None:
    store = await connect(dsn, SystemClock(), min_size=1, max_size=1)
    try:
        await store.put_project("p", ProjectPut(status="active", identity_mode="unique_value"))
    finally:
        await store.close()


async def _todo(dsn: str) -> int:
    store = await connect(dsn, SystemClock(), min_size=1, max_size=1)
    try:
        return (await store.get_project("p")).job_counts.todo
    finally:
        await store.close()


def test_enqueue_source_command(pg_dsn: str, tmp_path, capfd, caplog) -> None:
    caplog.set_level(logging.INFO)
    asyncio.run(_setup(pg_dsn))
    path = tmp_path / "s.zst"
    path.write_bytes(_source(2300))
    enqueue_source_command(database_url=pg_dsn, project_id="p", input=str(path))
    enqueue_source_command(database_url=pg_dsn, project_id="p", input=str(path))
    assert capfd.readouterr().out == ""
    logs = [r.fields for r in caplog.records if r.getMessage() == "source enqueued"]  # type: ignore[attr-defined]
    assert logs == [
        {"project_id": "p", "jobs": 2300, "inserted": 2300},
        {"project_id": "p", "jobs": 2300, "inserted": 0},
    ]
    assert asyncio.run(_todo(pg_dsn)) == 2300

    path.write_bytes(_source(2300, start=5000) + b"")
    with pytest.raises(CliError, match="source exceeds job limit"):
        enqueue_source_command(database_url=pg_dsn, project_id="p", input=str(path), max_jobs=1500)
    assert asyncio.run(_todo(pg_dsn)) == 3300  # the first batch was committed
    with pytest.raises(CliError, match="project not found"):
        enqueue_source_command(database_url=pg_dsn, project_id="nope", input=str(path))


def test_enqueue_source_imports_under_bulk_collection(pg_dsn: str, tmp_path, monkeypatch) -> None:
    """The CLI import runs with the collector as hq_apps.collector sets it, and gives it back."""
    import gc

    from hq_apps.cli import source_import as cli
    from hq_apps.collector import BULK_YOUNG_THRESHOLD

    asyncio.run(_setup(pg_dsn))
    path = tmp_path / "s.zst"
    path.write_bytes(_source(10))
    seen: list[tuple[int, int]] = []
    real = cli.import_source

    async def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return await real(*args, **kwargs)

    monkeypatch.setattr(cli, "import_source", watched)
    before = gc.get_threshold()
    enqueue_source_command(database_url=pg_dsn, project_id="p", input=str(path))
    assert seen[0][0] == BULK_YOUNG_THRESHOLD and seen[0][1] > 1_000
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
