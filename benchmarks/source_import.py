"""Source import throughput: pack N jobs, then import them locally and over HTTP.

    uv run python -m benchmarks.source_import [--jobs 1000000] [--database-url URL]

Steps, each on a fresh project of a fresh database (``src_bench`` on the given server):
1. ``source pack`` of N generated URLs (external_id mode, stable j1_ IDs);
2. local import into PostgreSQL (what ``tracker enqueue-source`` does);
3. the same file over HTTP (``hqctl enqueue-source`` → route 8 of a live tracker);
4. ``hqctl enqueue`` of the plain values in batches of 1,000 over HTTP.
Prints jobs/s per step and the process's peak RSS after each (the server runs in-process,
so the figure covers client and server together). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import sys
import tempfile
import time
from contextlib import redirect_stdout
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from hq_adapters.postgres import connect, migrate_dsn
from hq_adapters.sourcefile.pack import pack_values
from hq_apps.cli.hqctl import run as hqctl
from hq_apps.services.source_import import import_source
from hq_domain.clock import SystemClock
from hq_domain.projects import IdentityMode, ProjectPut

DB_NAME = "src_bench"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(step: str, jobs: int, seconds: float) -> None:
    print(f"{step:<28} jobs={jobs:>9} seconds={seconds:8.2f} jobs/s={jobs / seconds:>10.0f} "
          f"peak_rss_mib={peak_rss_mib():8.1f}", flush=True)  # fmt: skip


async def fresh_database(server_url: str) -> str:
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    finally:
        await conn.close()
    parts = urlsplit(server_url)
    dsn = urlunsplit((parts.scheme, parts.netloc, "/" + DB_NAME, parts.query, ""))
    await migrate_dsn(dsn, int(time.time()))
    return dsn


async def local_import(dsn: str, path: str, project: str) -> tuple[int, float]:
    store = await connect(dsn, SystemClock(), min_size=1, max_size=2)
    try:
        await store.put_project(project, ProjectPut(status="active", identity_mode="external_id"))
        start = time.perf_counter()
        result = await import_source(store, project, path, max_jobs=100_000_000,
                                     max_uncompressed=1 << 40)  # fmt: skip
        return result.jobs, time.perf_counter() - start
    finally:
        await store.close()


def http_steps(dsn: str, path: str, values_path: str, jobs: int) -> None:
    from tests.integration.client.harness import Admin, LiveTracker

    async def make_store():
        return await connect(dsn, SystemClock(), min_size=2, max_size=8)

    tracker = LiveTracker(make_store).start()
    admin = Admin(tracker)
    with tempfile.TemporaryDirectory() as tmp:
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(tracker.token)
        os.chmod(token, 0o600)
        conn = ["--url", tracker.url, "--allow-http", "--machine-token-file", token]
        try:
            admin.put_project("http-source", identity_mode="external_id")
            start = time.perf_counter()
            with redirect_stdout(io.StringIO()):
                rc = hqctl(
                    ["enqueue-source", "--project-id", "http-source", "--input", path, *conn]
                )
            assert rc == 0, "hqctl enqueue-source failed"
            report("http enqueue-source", jobs, time.perf_counter() - start)
            admin.put_project("http-enqueue", identity_mode="external_id")
            start = time.perf_counter()
            with redirect_stdout(io.StringIO()):
                rc = hqctl(["enqueue", "--project-id", "http-enqueue", "--input", values_path,
                            "--progress-every", "0", *conn])  # fmt: skip
            assert rc == 0, "hqctl enqueue failed"
            report("http enqueue (batches)", jobs, time.perf_counter() - start)
        finally:
            admin.close()
            tracker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "HQ_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="a server URL whose user may create the src_bench database",
    )
    parser.add_argument(
        "--local-only",
        action="store_true",
        help="pack and import locally only (the 10M-job memory check)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        values = os.path.join(tmp, "values.txt")
        with open(values, "w") as f:
            for i in range(args.jobs):
                f.write(f"https://example.org/item/{i}?q={i * 7919 % 100003}\n")
        packed = os.path.join(tmp, "jobs.jsonl.zst")
        start = time.perf_counter()
        with open(values, "rb") as reader:
            pack_values(reader, packed, IdentityMode.EXTERNAL_ID)
        report("source pack", args.jobs, time.perf_counter() - start)
        print(f"packed size: {os.path.getsize(packed)} bytes", flush=True)
        dsn = asyncio.run(fresh_database(args.database_url))
        jobs, seconds = asyncio.run(local_import(dsn, packed, "local"))
        report("local import (PostgreSQL)", jobs, seconds)
        if not args.local_only:
            http_steps(dsn, packed, values, args.jobs)
    return None


if __name__ == "__main__":
    sys.exit(main())
