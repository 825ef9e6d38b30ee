"""Admin-API steps of a scenario: create the project, enqueue the jobs, read the counts."""

from __future__ import annotations

import time
from dataclasses import dataclass

from benchmarks.loadgen.http import Connection

CLIENT_VERSION = "bench-1"


@dataclass(frozen=True, slots=True)
class Target:
    """Where the tracker listens and the admin+worker token the benchmark uses."""

    host: str
    port: int
    token: str
    server_pid: int | None = None

    def connection(self, *, worker: bool = False) -> Connection:
        headers = {"Authorization": f"Bearer {self.token}"}
        if worker:
            headers["X-SavewebHQ-Client-Version"] = CLIENT_VERSION
        return Connection(self.host, self.port, headers)


async def put_project(
    conn: Connection,
    project_id: str,
    *,
    identity_mode: str = "none",
    dispatch_qps: float | None = None,
    max_resets: int = 3,
) -> dict:
    doc = {
        "status": "active",
        "identity_mode": identity_mode,
        "dispatch_qps": dispatch_qps,
        "max_resets": max_resets,
        "client_versions": [CLIENT_VERSION],
    }
    _, summary = await conn.json("PUT", f"/api/v1/admin/projects/{project_id}", doc)
    return summary


async def enqueue(
    conn: Connection,
    project_id: str,
    count: int,
    *,
    batch: int = 5000,
    external_ids: bool = False,
    prefix: str = "job",
) -> float:
    """Enqueue ``count`` jobs in batches; returns the wall time spent (seconds)."""
    path = f"/api/v1/admin/projects/{project_id}/jobs"
    t0 = time.perf_counter()
    for start in range(0, count, batch):
        stop = min(count, start + batch)
        if external_ids:
            jobs = [
                {"id": f"{prefix}-{i}", "value": f"https://example.org/{prefix}/{i}"}
                for i in range(start, stop)
            ]
        else:
            jobs = [{"value": f"https://example.org/{prefix}/{i}"} for i in range(start, stop)]
        _, result = await conn.json("POST", path, {"jobs": jobs})
        if result["submitted"] != stop - start:
            raise AssertionError(f"enqueue answered {result!r}")
    return time.perf_counter() - t0


async def job_counts(conn: Connection, project_id: str) -> dict[str, int]:
    _, summary = await conn.json("GET", f"/api/v1/admin/projects/{project_id}")
    return summary["job_counts"]


async def delete_project(conn: Connection, project_id: str) -> None:
    await conn.json("DELETE", f"/api/v1/admin/projects/{project_id}", ok=(204,))
