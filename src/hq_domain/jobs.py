"""Jobs: states, the validated input JobSpec, stored job records and attempt payloads.

Free-form JSON objects (``attr``, ``meta``, ``details``) are plain ``dict``s here; their
canonical encoding for size limits and identity lives in :mod:`hq_domain.canonical`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class JobStatus(StrEnum):
    TODO = "todo"
    WIP = "wip"
    DONE = "done"
    FAILED = "failed"
    RESET_EXHAUSTED = "reset_exhausted"


ALL_STATUSES: tuple[JobStatus, ...] = tuple(JobStatus)
TERMINAL_REQUEUEABLE = frozenset({JobStatus.FAILED, JobStatus.RESET_EXHAUSTED})

JOB_TYPES = ("seed", "asset")


def job_type(spec: Mapping[str, Any]) -> str:
    """A stored job's type for claims and filters: ``seed`` when its spec has none (absent or
    JSON null). SQL: ``tracker_rule_job_type`` (migration 0008)."""
    t = spec.get("type")
    return "seed" if t is None else t


def type_accepted(job_type: str, accept_types: Collection[str]) -> bool:
    """A claim's ``accept_types`` filter: empty accepts every type. SQL:
    ``tracker_rule_type_accepted``."""
    return not accept_types or job_type in accept_types


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A validated job as submitted (enqueue API, source line, hqctl JSONL).

    ``type`` is kept as sent (``None`` when absent) because the stored spec, and therefore
    identity comparison, distinguishes an absent type from ``"seed"`` (spec §2.6, §8.10).
    ``hops == 0`` and ``attr is None`` mean absent; ``via`` may be ``""`` (kept).
    """

    value: str
    id: str | None = None
    type: str | None = None
    via: str | None = None
    hops: int = 0
    attr: dict[str, Any] | None = None
    random_key: int | None = None

    @staticmethod
    def plain(value: str, id: str | None, hops: int) -> JobSpec:
        """``JobSpec(value, id, None, None, hops)``, built at about half the cost.

        The frozen dataclass's ``__init__`` stores each field through ``object.__setattr__``
        (~0.75 µs for the seven here); this stores them through the slots' own descriptors
        (~0.4 µs). It is the common shape of an enqueued or imported job, so it is what
        validation's fast path builds, a million times per million-job import. Same class,
        same fields, still frozen (tests/unit/domain/test_jobs.py)."""
        spec = _new(JobSpec)
        _set_value(spec, value)
        _set_id(spec, id)
        _set_type(spec, None)
        _set_via(spec, None)
        _set_hops(spec, hops)
        _set_attr(spec, None)
        _set_random_key(spec, None)
        return spec

    @property
    def effective_type(self) -> str:
        """The type used for claiming and filters: ``seed`` when absent."""
        return self.type or "seed"

    def spec_fields(self) -> dict[str, Any]:
        """The stored ``spec`` object: ``{type?, via?, hops?, attr?}`` with empties omitted."""
        out: dict[str, Any] = {}
        if self.type:
            out["type"] = self.type
        if self.via is not None:
            out["via"] = self.via
        if self.hops:
            out["hops"] = self.hops
        if self.attr:
            out["attr"] = self.attr
        return out


_new = object.__new__
(_set_value, _set_id, _set_type, _set_via, _set_hops, _set_attr, _set_random_key) = (
    JobSpec.__dict__[name].__set__
    for name in ("value", "id", "type", "via", "hops", "attr", "random_key")
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A completion outcome, stored exactly as sent (absent ``code``/``uri``/``meta`` → null)."""

    kind: str
    code: int | None = None
    uri: str | None = None
    meta: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "code": self.code, "uri": self.uri, "meta": self.meta}


@dataclass(frozen=True, slots=True)
class ExecutionError:
    code: str
    message: str = ""
    details: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


@dataclass(frozen=True, slots=True)
class ArtifactReceipt:
    id: str
    issuer: str
    object_id: str
    checksum: str
    size_bytes: int
    accepted_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "issuer": self.issuer,
            "object_id": self.object_id,
            "checksum": self.checksum,
            "size_bytes": self.size_bytes,
            "accepted_at": self.accepted_at,
        }


@dataclass(slots=True)
class Job:
    """A stored job row as the read side sees it (AdminJob, spec §1.7.7).

    ``spec`` is the stored spec object (see :meth:`JobSpec.spec_fields`).
    ``outcome``/``execution_error`` are the stored JSON objects (or ``None``).
    ``artifact_receipts`` is ``[]`` when never set and ``None`` when a completion stored null.
    """

    job_id: int
    project_id: str
    value: str
    external_id: str | None
    spec: dict[str, Any]
    random_key: int
    status: JobStatus
    attempt_id: str | None
    worker_id: str | None
    lease_expires_at: int | None
    reset_count: int
    outcome: dict[str, Any] | None
    artifact_receipts: list[dict[str, Any]] | None
    execution_error: dict[str, Any] | None
    created_at: int
    updated_at: int
    completed_at: int | None
    # The worker of the last attempt that ended (completed, failed or expired); not part of
    # AdminJob (worker_id is only kept while WIP, spec §2.1): the dashboard shows it.
    last_worker_id: str | None = None

    @property
    def effective_type(self) -> str:
        return job_type(self.spec)


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """One job handed out by a claim (spec §1.2.3 output keys plus attempt fields)."""

    job_id: int
    attempt_id: str
    lease_expires_at: int
    value: str
    external_id: str | None
    spec: dict[str, Any] = field(default_factory=dict)
