"""A worker and an admin written only against the documented wire protocol (spec §1, §6).

Plain httpx and JSON; no project imports. Every response is checked the way the official
clients check it: ``Cache-Control`` contains ``no-store``, ``application/json``, exactly the
documented keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

ITEM_KEYS = {"job_id", "attempt_id", "status", "job_status", "lease_expires_at", "error"}
ERROR_KEYS = {"code", "message", "retryable", "retry_after_ms", "details"}
CLAIM_KEYS = {"project_id", "jobs", "retry_after_ms", "policy_version"}
JOB_KEYS = {"job_id", "attempt_id", "lease_expires_at", "value", "type"}
OPTIONAL_JOB_KEYS = {"id", "via", "hops", "attr"}


class ApiError(Exception):
    def __init__(self, status: int, error: dict[str, Any], headers: httpx.Headers) -> None:
        super().__init__(f"{status} {error.get('code')}: {error.get('message')}")
        self.status = status
        self.error = error
        self.headers = headers


def call(client: httpx.Client, method: str, path: str, token: str, body: Any = None,
         version: str | None = None) -> Any:  # fmt: skip
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Cache-Control": "no-store, no-cache, max-age=0",
    }
    if version is not None:
        headers["X-SavewebHQ-Client-Version"] = version
    r = client.request(method, path, json=body, headers=headers)
    assert "no-store" in r.headers.get("cache-control", "").lower(), (path, r.headers)
    if r.status_code == 204:
        return None
    assert r.headers["content-type"].split(";")[0] == "application/json"
    doc = r.json()
    if r.status_code >= 300:
        assert set(doc) == {"error"} and set(doc["error"]) == ERROR_KEYS, doc
        raise ApiError(r.status_code, doc["error"], r.headers)
    return doc


@dataclass
class DrainStats:
    claims: int = 0
    empty_claims: int = 0
    rate_limited: int = 0
    completed: int = 0
    failed: int = 0
    retried: int = 0
    extended: int = 0
    seen: set[int] = field(default_factory=set)


Decision = Callable[[dict[str, Any], int], str]
"""(job, attempt number) → "complete" | "fail" | "retry" | "extend-complete"."""


class WireWorker:
    def __init__(
        self, client: httpx.Client, token: str, version: str, project: str, worker_id: str
    ) -> None:
        self.client, self.token, self.version = client, token, version
        self.project, self.worker_id = project, worker_id
        self.policy: dict[str, Any] = {}

    def _post(self, op: str, body: dict[str, Any]) -> Any:
        return call(self.client, "POST", f"/api/v1/projects/{self.project}/jobs/{op}",
                    self.token, body, self.version)  # fmt: skip

    def refresh_policy(self) -> dict[str, Any]:
        self.policy = call(self.client, "GET", f"/api/v1/projects/{self.project}", self.token,
                           version=self.version)  # fmt: skip
        assert set(self.policy) == {
            "project_id", "dispatch_qps", "worker_claim_qps", "max_jobs_per_claim",
            "recommended_lease_seconds", "policy_version", "refresh_after_ms",
        }  # fmt: skip
        return self.policy

    def claim(self, max_jobs: int, stats: DrainStats) -> list[dict[str, Any]]:
        """One claim; a 429 is waited out (``retry_after_ms``) and retried."""
        if not self.policy:
            self.refresh_policy()
        while True:
            body = {
                "worker_id": self.worker_id,
                "max_jobs": min(max_jobs, self.policy["max_jobs_per_claim"]),
                "lease_seconds": self.policy["recommended_lease_seconds"],
                "accept_types": None,
                "policy_version": self.policy["policy_version"],
            }
            try:
                doc = self._post("claim", body)
            except ApiError as exc:
                if exc.status == 429 and exc.error["retryable"]:
                    ms = exc.error["retry_after_ms"]
                    assert ms >= 1 and int(exc.headers["retry-after"]) == -(-ms // 1000)
                    stats.rate_limited += 1
                    time.sleep(ms / 1000)
                    continue
                raise
            assert set(doc) == CLAIM_KEYS and doc["project_id"] == self.project
            for job in doc["jobs"]:
                assert JOB_KEYS <= set(job) <= JOB_KEYS | OPTIONAL_JOB_KEYS, job
            stats.claims += 1
            return doc["jobs"]

    def drain(self, decide: Decision, batch: int = 64, idle_limit: int = 3) -> DrainStats:
        stats = DrainStats()
        attempts: dict[int, int] = {}
        idle = 0
        while idle < idle_limit:
            jobs = self.claim(batch, stats)
            if not jobs:
                stats.empty_claims += 1
                idle += 1
                continue
            idle = 0
            done, failed, extend = [], [], []
            for job in jobs:
                n = attempts[job["job_id"]] = attempts.get(job["job_id"], 0) + 1
                stats.seen.add(job["job_id"])
                ref = {"job_id": job["job_id"], "attempt_id": job["attempt_id"]}
                action = decide(job, n)
                if action == "complete":
                    done.append(
                        {
                            **ref,
                            "outcome": {"kind": "success", "code": 200},
                            "artifact_receipts": None,
                        }
                    )
                elif action == "extend-complete":
                    extend.append(ref)
                    done.append({**ref, "outcome": {"kind": "success"}, "artifact_receipts": []})
                else:
                    err = {"code": "boom", "message": "failed on purpose", "details": None}
                    failed.append({**ref, "retryable": action == "retry", "error": err})
                    stats.retried += action == "retry"
            if extend:
                res = self._post(
                    "extend-lease",
                    {"worker_id": self.worker_id, "extend_seconds": 120, "items": extend},
                )
                self._check(res, len(extend), "wip")
                stats.extended += len(extend)
            if done:
                self._check(
                    self._post("complete", {"worker_id": self.worker_id, "items": done}),
                    len(done),
                    "done",
                )
                stats.completed += len(done)
            if failed:
                res = self._post("fail", {"worker_id": self.worker_id, "items": failed})
                self._check(res, len(failed), None)
                stats.failed += len(failed)
        return stats

    @staticmethod
    def _check(doc: dict[str, Any], n: int, job_status: str | None) -> None:
        assert set(doc) == {"results"} and len(doc["results"]) == n
        for item in doc["results"]:
            assert set(item) == ITEM_KEYS and item["status"] == "applied", item
            assert item["error"] is None
            if job_status:
                assert item["job_status"] == job_status
