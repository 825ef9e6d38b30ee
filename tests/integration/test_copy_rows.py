"""The plain enqueue's hand-encoded binary COPY (hq_adapters.postgres.copy_rows), sent in two
pieces, stores what each job says, field by field, in every identity mode, with and without
reserved ids."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import asyncpg
import pytest

from hq_adapters.postgres import connect
from hq_adapters.postgres.copy_rows import CopyRows
from hq_adapters.postgres.enqueue import spec_json
from hq_domain.clock import SystemClock
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode, ProjectPut

pytestmark = pytest.mark.postgres
JOBS = [
    JobSpec(value="https://e/1"),
    JobSpec(value="ünïcødé 💾 \t tab \\ backslash \n newline", random_key=-(2**31)),
    JobSpec(value="v3", type="asset", via="https://e/", hops=3, random_key=2**31 - 1),
    JobSpec(value="v4", attr={"k": [1, "ü", {"n": None}]}, type="seed"),
    JobSpec(value="x" * 8192, via=""),
]


def with_ids(jobs: list[JobSpec]) -> list[JobSpec]:
    return [JobSpec(j.value, f"id-{n}", j.type, j.via, j.hops, j.attr, j.random_key)
            for n, j in enumerate(jobs)]  # fmt: skip


@pytest.mark.parametrize("mode", list(IdentityMode))
@pytest.mark.parametrize("reserved", [False, True])
async def test_rows_hold_every_field(pg_dsn: str, mode: IdentityMode, reserved: bool) -> None:
    store = await connect(pg_dsn, SystemClock(), min_size=1, max_size=1)
    try:
        await store.put_project("p", ProjectPut(status="active", identity_mode=mode.value))
    finally:
        await store.close()
    jobs = with_ids(JOBS) if mode is IdentityMode.EXTERNAL_ID else JOBS
    ids = [1000 + 7 * n for n in range(len(jobs))] if reserved else None
    rows = CopyRows("p", 1_700_000_000, True, with_ids=reserved, spec_json=spec_json,
                    empty_spec="{}")  # fmt: skip
    rows.add(jobs[:2], mode, None if ids is None else ids[:2])
    first = rows.take()  # sent before the rest is encoded, as the store does
    rows.add(jobs[2:], mode, None if ids is None else ids[2:])
    pieces = [first, rows.finish()]

    async def source() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.copy_to_table("tracker_jobs", source=source(), columns=rows.columns,
                                 format="binary")  # fmt: skip
        got = await conn.fetch("SELECT * FROM tracker_jobs ORDER BY job_id")
    finally:
        await conn.close()
    assert rows.rows == len(jobs) == len(got)
    for n, (job, row) in enumerate(zip(jobs, got, strict=True)):
        if ids is not None:
            assert row["job_id"] == ids[n]
        assert row["project_id"] == "p" and row["status"] == "todo"
        assert row["created_at"] == row["updated_at"] == 1_700_000_000
        assert row["random_queue"] is True and row["reset_count"] == 0
        assert row["value"] == job.value
        assert json.loads(row["spec"]) == job.spec_fields()
        assert row["external_id"] == (job.id if mode is IdentityMode.EXTERNAL_ID else None)
        digest = unique_value_digest(job.value) if mode is IdentityMode.UNIQUE_VALUE else None
        assert row["unique_value_digest"] == digest
        if job.random_key is not None:
            assert row["random_key"] == job.random_key
        assert row["attempt_id"] is None and row["outcome"] is None


def test_ids_must_match_the_columns() -> None:
    rows = CopyRows("p", 1, False, with_ids=False, spec_json=spec_json, empty_spec="{}")
    with pytest.raises(ValueError):
        rows.add(JOBS, IdentityMode.NONE, [1] * len(JOBS))
