"""A plain-Python reference model of one store, for the state machine.

Deliberately naive and independent of the adapters and of most domain helpers: every rule
of spec §1.7 and §2 is re-derived here in the simplest way (lists, dicts, loops). Values the
model cannot know in advance (attempt ids, generated random keys, job ids) are learned from
the store's answers by the state machine and checked for consistency there.

Operations either return a prediction or raise :class:`Expected`, which carries the errors
the store may raise (more than one where the spec leaves their precedence open); a raising
operation leaves the model unchanged unless its docstring says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hq_domain.errors import (
    HqError,
    IdentityConflict,
    InvalidJob,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    ProjectDispatchRateLimited,
    ProjectNotActive,
)
from hq_domain.jobs import JobSpec

NS = 1_000_000_000


class Expected(Exception):
    def __init__(self, *errors: HqError) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass
class MJob:
    job_id: int
    project_id: str
    value: str
    external_id: str | None
    spec: dict[str, Any]
    random_key: int
    created_at: int
    updated_at: int
    status: str = "todo"
    attempt_id: str | None = None
    worker_id: str | None = None
    lease_expires_at: int | None = None
    reset_count: int = 0
    outcome: dict[str, Any] | None = None
    artifact_receipts: list[dict[str, Any]] | None = field(default_factory=list)
    execution_error: dict[str, Any] | None = None
    completed_at: int | None = None
    last_worker_id: str | None = None


@dataclass
class MProject:
    id: str
    status: str
    identity_mode: str
    claim_order: str
    dispatch_qps: float | None
    worker_claim_qps: float | None
    max_jobs_per_claim: int
    max_resets: int
    recommended_lease_seconds: int
    client_versions: tuple[str, ...]
    policy_version: int
    created_at: int
    updated_at: int
    tokens: float | None = None
    refilled_at_ns: int | None = None
    jobs: dict[int, MJob] = field(default_factory=dict)
    max_resets_ever: int = 0
    resets: int = 0  # running total of resets (issue 14: migration 0010's trigger)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("todo", "wip", "done", "failed", "reset_exhausted"), 0)
        for j in self.jobs.values():
            out[j.status] += 1
        return out

    def find_identity(self, key: str) -> MJob | None:
        for j in self.jobs.values():
            if self.identity_mode == "external_id" and j.external_id == key:
                return j
            if self.identity_mode == "unique_value" and j.value == key:
                return j
        return None


def spec_of(s: JobSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.type:
        out["type"] = s.type
    if s.via is not None:
        out["via"] = s.via
    if s.hops:
        out["hops"] = s.hops
    if s.attr:
        out["attr"] = s.attr
    return out


@dataclass
class ClaimPrediction:
    job_ids: list[int]
    lease_expires_at: int
    retry_after_ms: int
    policy_version: int


class Model:
    def __init__(self) -> None:
        self.projects: dict[str, MProject] = {}
        self.worker_active = True

    # --- projects ---------------------------------------------------------------------
    def put_project(self, pid: str, fields: dict[str, Any], now_s: int) -> MProject:
        old = self.projects.get(pid)
        mode = fields.get("identity_mode")
        if old is not None and mode and mode != old.identity_mode:
            raise Expected(InvalidRequest("project identity mode cannot be changed"))
        policy = (
            fields.get("dispatch_qps"),
            fields.get("worker_claim_qps"),
            fields.get("max_jobs_per_claim") or 256,
            3 if fields.get("max_resets") is None else fields["max_resets"],
            fields.get("recommended_lease_seconds") or 300,
            tuple(sorted(fields.get("client_versions") or ())),
        )
        if old is None:
            p = MProject(pid, fields["status"], mode or "external_id",
                         fields.get("claim_order") or "fifo", *policy, 1, now_s, now_s)
            self.projects[pid] = p
        else:
            p = old
            before = (p.dispatch_qps, p.worker_claim_qps, p.max_jobs_per_claim, p.max_resets,
                      p.recommended_lease_seconds, p.client_versions)
            if before != policy:
                p.policy_version += 1
            if p.dispatch_qps != policy[0]:
                p.tokens = p.refilled_at_ns = None
            (p.dispatch_qps, p.worker_claim_qps, p.max_jobs_per_claim, p.max_resets,
             p.recommended_lease_seconds, p.client_versions) = policy
            p.status = fields["status"]
            p.claim_order = fields.get("claim_order") or p.claim_order
            p.updated_at = now_s
        p.max_resets_ever = max(p.max_resets_ever, p.max_resets)
        return p

    def delete_project(self, pid: str) -> None:
        p = self.projects.get(pid)
        if p is None:
            raise Expected(NotFound("project not found"))
        if any(j.status == "wip" for j in p.jobs.values()):
            raise Expected(InvalidRequest("project has WIP jobs"))
        del self.projects[pid]

    # --- enqueue ------------------------------------------------------------------------
    def enqueue(self, pid: str, specs: list[JobSpec]) -> list[JobSpec]:
        """The jobs that will be inserted, in order (explicit random keys resolved)."""
        p = self.projects.get(pid)
        if p is None:
            raise Expected(NotFound("project not found"))
        if p.status == "archived":
            raise Expected(ProjectNotActive("archived project cannot accept jobs"))
        for s in specs:
            if p.identity_mode == "external_id" and not s.id:
                raise Expected(InvalidJob("id is required for external_id projects"))
            if p.identity_mode != "external_id" and s.id:
                raise Expected(InvalidJob("id is allowed only for external_id projects"))
        if p.identity_mode == "none":
            return list(specs)
        conflict = "job identity already exists with a different spec"
        batch: list[JobSpec] = []
        for s in specs:
            key = s.id if p.identity_mode == "external_id" else s.value
            same = [i for i, b in enumerate(batch) if (b.id if b.id else b.value) == key]
            if not same:
                batch.append(s)
                continue
            first = batch[same[0]]
            if first.value != s.value or spec_of(first) != spec_of(s):
                raise Expected(IdentityConflict(conflict))
            if first.random_key is not None and s.random_key is not None:
                if first.random_key != s.random_key:
                    raise Expected(IdentityConflict("job identity has conflicting random keys"))
            elif s.random_key is not None:
                batch[same[0]] = JobSpec(first.value, first.id, first.type, first.via,
                                         first.hops, first.attr, s.random_key)
        fresh = []
        for s in batch:
            stored = p.find_identity(s.id if p.identity_mode == "external_id" else s.value)
            if stored is None:
                fresh.append(s)
            elif stored.value != s.value or stored.spec != spec_of(s):
                raise Expected(IdentityConflict(conflict))
        return fresh

    # --- worker side --------------------------------------------------------------------
    def _gate(self, pid: str, op: str) -> MProject:
        errors: list[HqError] = []
        if not self.worker_active:
            errors.append(PermissionDenied("active worker role required"))
        p = self.projects.get(pid)
        if p is None:
            errors.append(NotFound("project not found"))
        elif p.status == "archived" or (p.status == "draining" and op == "claim"):
            errors.append(ProjectNotActive("project is not active"))
        if errors:
            raise Expected(*errors)
        assert p is not None
        return p

    def policy(self, pid: str) -> MProject:
        return self._gate(pid, "policy")

    def expire(self, p: MProject, j: MJob, now_s: int) -> None:
        j.reset_count += 1
        p.resets += 1
        j.status = "reset_exhausted" if j.reset_count > p.max_resets else "todo"
        j.last_worker_id = j.worker_id
        j.attempt_id = j.worker_id = j.lease_expires_at = None
        j.updated_at = now_s

    def expired(self, now_s: int) -> list[MJob]:
        return [j for p in self.projects.values() for j in p.jobs.values()
                if j.status == "wip" and j.lease_expires_at is not None
                and j.lease_expires_at <= now_s]

    def claim(self, pid: str, worker: str, max_jobs: int, lease: int, types: tuple[str, ...],
              now_ns: int) -> ClaimPrediction:
        """Mutates (sweep, bucket) even when it raises the 429 prediction."""
        p = self._gate(pid, "claim")
        now_s = now_ns // NS
        limit = min(max_jobs, p.max_jobs_per_claim)
        tokens = None
        if p.dispatch_qps is not None:
            qps = p.dispatch_qps
            cap = 1.0 if qps <= 1000 else min(qps / 10, 256.0)
            if p.tokens is None or p.refilled_at_ns is None:
                tokens = cap
            else:
                tokens = min(cap, p.tokens + max(0, now_ns - p.refilled_at_ns) * qps / 1e9)
            limit = min(limit, 256 if tokens >= 256 else math.floor(tokens))
        for j in p.jobs.values():
            if j.status == "wip" and j.lease_expires_at <= now_s:  # type: ignore[operator]
                self.expire(p, j, now_s)
        todo = [j for j in p.jobs.values() if j.status == "todo"
                and (not types or (j.spec.get("type") or "seed") in types)]
        new_refill = now_ns if p.refilled_at_ns is None else max(p.refilled_at_ns, now_ns)
        if limit < 1:
            assert tokens is not None and p.dispatch_qps is not None
            p.tokens, p.refilled_at_ns = tokens, new_refill
            if todo:
                wait = max(1, math.ceil((1 - tokens) * 1000 / p.dispatch_qps))
                raise Expected(ProjectDispatchRateLimited(pid, p.policy_version, wait))
            return ClaimPrediction([], now_s + lease, 1000, p.policy_version)
        if p.claim_order == "fifo":
            todo.sort(key=lambda j: (j.created_at, j.job_id))
        else:
            todo.sort(key=lambda j: (j.random_key, j.job_id))
        chosen = todo[:limit]
        for j in chosen:
            j.status, j.worker_id, j.lease_expires_at = "wip", worker, now_s + lease
            j.attempt_id = None  # learned from the store's answer
            j.updated_at = now_s
        retry = 1000
        if tokens is not None and chosen:
            assert p.dispatch_qps is not None
            left = tokens - len(chosen)
            retry = 0 if left >= 1 else max(1, math.ceil((1 - left) * 1000 / p.dispatch_qps))
            p.tokens, p.refilled_at_ns = left, new_refill
        return ClaimPrediction([j.job_id for j in chosen], now_s + lease, retry, p.policy_version)

    def _live(self, p: MProject, worker: str, job_id: int, attempt: str, now_s: int) -> MJob | None:
        j = p.jobs.get(job_id)
        if (j is None or j.status != "wip" or j.attempt_id != attempt or j.worker_id != worker
                or j.lease_expires_at is None or j.lease_expires_at <= now_s):
            return None
        return j

    def mutate(self, op: str, pid: str, worker: str, items: list[tuple[int, str, Any]],
               now_s: int) -> list[tuple[bool, str | None, int | None]]:
        """complete/fail/extend: per item (applied, job_status, lease_expires_at).

        ``items`` carry (job_id, attempt_id, payload): an (outcome, receipts) pair,
        a (retryable, error) pair, or the extension in seconds."""
        p = self._gate(pid, op)
        out: list[tuple[bool, str | None, int | None]] = []
        seen: set[tuple[int, str]] = set()
        for job_id, attempt, payload in items:
            j = None if (job_id, attempt) in seen else self._live(p, worker, job_id, attempt, now_s)
            seen.add((job_id, attempt))
            if j is None:
                out.append((False, None, None))
                continue
            j.updated_at = now_s
            if op == "extend":
                j.lease_expires_at = max(j.lease_expires_at or 0, now_s + payload)
                out.append((True, "wip", now_s + payload))
                continue
            j.last_worker_id = j.worker_id
            j.attempt_id = j.worker_id = j.lease_expires_at = None
            if op == "complete":
                j.status, (j.outcome, j.artifact_receipts) = "done", payload
                j.execution_error, j.completed_at = None, now_s
            else:
                retryable, j.execution_error = payload
                if not retryable:
                    j.status, j.completed_at = "failed", now_s
                else:
                    j.reset_count += 1
                    p.resets += 1
                    exhausted = j.reset_count > p.max_resets
                    j.status = "reset_exhausted" if exhausted else "todo"
                    j.completed_at = now_s if exhausted else None
            out.append((True, j.status, None))
        return out

    # --- admin jobs ---------------------------------------------------------------------
    def requeue(self, pid: str, job_id: int, now_s: int) -> None:
        p = self.projects.get(pid)
        j = None if p is None else p.jobs.get(job_id)
        if j is None or j.status not in ("failed", "reset_exhausted"):
            raise Expected(InvalidRequest("job is not failed or reset_exhausted"))
        j.status, j.reset_count, j.updated_at = "todo", 0, now_s
        j.outcome = j.execution_error = j.completed_at = None
        j.artifact_receipts = []

    def delete_job(self, pid: str, job_id: int) -> None:
        p = self.projects.get(pid)
        j = None if p is None else p.jobs.get(job_id)
        if j is None or j.status == "wip":
            raise Expected(InvalidRequest("job not found or is WIP"))
        assert p is not None
        del p.jobs[job_id]
