"""Request bodies of the JSON routes (spec §1.2, §1.7), as msgspec Structs.

Every field is optional and nullable on purpose: the reference decodes ``null`` and missing
keys to zero values and lets domain validation produce the spec's messages (spec §1.3 item 4),
so only type errors and unknown keys fail at decode time (``invalid JSON body: ...``).
Integer fields carry their Go type's range so out-of-range literals are decode errors too.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
JsonObject = dict[str, Any]


class _In(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class JobIn(_In):
    id: str | None = None
    value: str | None = None
    type: str | None = None
    via: str | None = None
    hops: Int64 | None = None
    attr: JsonObject | None = None
    random_key: Int32 | None = None


class EnqueueIn(_In):
    jobs: list[JobIn] | None = None


class PutProjectIn(_In):
    status: str | None = None
    identity_mode: str | None = None
    claim_order: str | None = None
    dispatch_qps: float | None = None
    worker_claim_qps: float | None = None
    max_jobs_per_claim: Int64 | None = None
    max_resets: Int64 | None = None
    recommended_lease_seconds: Int64 | None = None
    client_versions: list[str] | None = None


class PutUserIn(_In):
    status: str | None = None
    roles: list[str] | None = None


class ClaimIn(_In):
    worker_id: str | None = None
    max_jobs: Int64 | None = None
    lease_seconds: Int64 | None = None
    accept_types: list[str] | None = None
    policy_version: Int64 | None = None


class OutcomeIn(_In):
    kind: str | None = None
    code: Int64 | None = None
    uri: str | None = None
    meta: JsonObject | None = None


class ReceiptIn(_In):
    id: str | None = None
    issuer: str | None = None
    object_id: str | None = None
    checksum: str | None = None
    size_bytes: Int64 | None = None
    accepted_at: Int64 | None = None


class CompleteItemIn(_In):
    job_id: Int64 | None = None
    attempt_id: str | None = None
    outcome: OutcomeIn | None = None
    artifact_receipts: list[ReceiptIn] | None = None


class CompleteIn(_In):
    worker_id: str | None = None
    items: list[CompleteItemIn] | None = None


class ExecutionErrorIn(_In):
    code: str | None = None
    message: str | None = None
    details: JsonObject | None = None


class FailItemIn(_In):
    job_id: Int64 | None = None
    attempt_id: str | None = None
    retryable: bool | None = None
    error: ExecutionErrorIn | None = None


class FailIn(_In):
    worker_id: str | None = None
    items: list[FailItemIn] | None = None


class AttemptRefIn(_In):
    job_id: Int64 | None = None
    attempt_id: str | None = None


class ExtendIn(_In):
    worker_id: str | None = None
    extend_seconds: Int64 | None = None
    items: list[AttemptRefIn] | None = None


REQUEST_TYPES: tuple[type[msgspec.Struct], ...] = (
    EnqueueIn,
    PutProjectIn,
    PutUserIn,
    ClaimIn,
    CompleteIn,
    FailIn,
    ExtendIn,
)
