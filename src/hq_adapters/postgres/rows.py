"""Database records → domain values, and domain values → bound parameters.

jsonb travels as text in both directions (no global codec), so that SQL NULL and the JSON
value ``null`` stay distinct: ``artifact_receipts`` is SQL NULL when never set (reads as
``[]``) and JSON ``null`` when a completion stored null (reads as ``None``). msgspec does the
JSON (several times faster than the stdlib on this hot path); the stdlib decoder remains the
fallback for what msgspec refuses but jsonb can hold (numbers beyond float range).
"""

from __future__ import annotations

import json
import re
from typing import Any

import asyncpg
import msgspec

from hq_domain.jobs import ClaimedJob, Job, JobStatus
from hq_domain.progress import HistoryPoint
from hq_domain.projects import (
    ClaimOrder,
    IdentityMode,
    JobCounts,
    Project,
    ProjectStatus,
    ProjectSummary,
)
from hq_domain.users import Role, User, UserStatus

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def dump(value: Any) -> str:
    """JSON text for a jsonb parameter (``None`` becomes JSON ``null``). Values reaching the
    adapter were validated (finite numbers only, see hq_domain.canonical)."""
    return _encode(value).decode()


def load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return _decode(text)
    except msgspec.DecodeError:
        return json.loads(text)
    except RecursionError:
        return _load_deep(text)


def _load_deep(text: str) -> Any:
    """A jsonb value too deep for the decoders. Only a row written by another implementation
    can hold one (this API refuses values nested deeper than MAX_JSON_DEPTH; the reference
    accepts 10,000 levels): the top object's members are decoded where possible and the deep
    ones kept as ``msgspec.Raw``, which the response encoder copies verbatim and the dashboard
    shows as stored."""
    members = _top_members(text)
    if members is None:
        return msgspec.Raw(text)
    out: dict[str, Any] = {}
    for key, raw in members:
        try:
            out[key] = _decode(raw)
        except RecursionError:
            out[key] = msgspec.Raw(raw)
    return out


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_TOKEN = re.compile(r'["{}\[\],:]')


def _top_members(text: str) -> list[tuple[str, str]] | None:
    """(key, value text) of a JSON object's top-level members, found without recursion (the
    decoders cannot even skip a value nested this deep); None if ``text`` is not an object."""
    start = text.find("{")
    if start < 0 or text[:start].strip():
        return None
    members: list[tuple[str, str]] = []
    depth, pos, key, value_start = 0, start, None, -1
    while (m := _TOKEN.search(text, pos)) is not None:
        ch, pos = m.group(), m.start()
        if ch == '"':
            s = _STRING.match(text, pos)
            if s is None:
                return None
            if depth == 1 and key is None and value_start < 0:
                key = _decode(s.group())
            pos = s.end()
            continue
        pos += 1
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                if key is not None:
                    members.append((key, text[value_start:pos - 1].strip()))
                return members
        elif depth == 1 and ch == ":":
            value_start = pos
        elif depth == 1 and ch == ",":
            if key is None:
                return None
            members.append((key, text[value_start:pos - 1].strip()))
            key, value_start = None, -1
    return None


def project(r: asyncpg.Record) -> Project:
    return Project(
        id=r["id"],
        status=ProjectStatus(r["status"]),
        identity_mode=IdentityMode(r["identity_mode"]),
        claim_order=ClaimOrder(r["claim_order"]),
        dispatch_qps=r["dispatch_qps"],
        worker_claim_qps=r["worker_claim_qps"],
        max_jobs_per_claim=r["max_jobs_per_claim"],
        max_resets=r["max_resets"],
        recommended_lease_seconds=r["recommended_lease_seconds"],
        client_versions=tuple(sorted(r["client_versions"] or ())),
        policy_version=r["policy_version"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        dispatch_tokens=r["dispatch_tokens"],
        dispatch_refilled_at_ns=r["dispatch_refilled_at_ns"],
    )


def project_params(p: Project) -> tuple[Any, ...]:
    """Parameters $1..$15 of ``upsert_project``."""
    return (
        p.id,
        p.status.value,
        p.identity_mode.value,
        p.claim_order.value,
        p.dispatch_qps,
        p.worker_claim_qps,
        p.max_jobs_per_claim,
        p.policy_version,
        p.dispatch_tokens,
        p.dispatch_refilled_at_ns,
        list(p.client_versions),
        p.max_resets,
        p.recommended_lease_seconds,
        p.created_at,
        p.updated_at,
    )


def history_point(r: asyncpg.Record) -> HistoryPoint:
    """One count snapshot (migrations 0005, 0010) of ``project_history`` / ``all_history``."""
    return HistoryPoint(
        r["minute_s"],
        JobCounts(r["todo"], r["wip"], r["done"], r["failed"], r["reset_exhausted"]),
        r["resets"],
    )


def summary(r: asyncpg.Record) -> ProjectSummary:
    counts = JobCounts(
        todo=r["todo"], wip=r["wip"], done=r["done"], failed=r["failed"],
        reset_exhausted=r["reset_exhausted"],
    )
    return ProjectSummary(project(r), counts)


def _receipts(text: str | None) -> list[dict[str, Any]] | None:
    return [] if text is None else load(text)


def job(r: asyncpg.Record) -> Job:
    return Job(
        job_id=r["job_id"],
        project_id=r["project_id"],
        value=r["value"],
        external_id=r["external_id"],
        spec=load(r["spec"]) or {},
        random_key=r["random_key"],
        status=JobStatus(r["status"]),
        attempt_id=r["attempt_id"],
        worker_id=r["worker_id"],
        lease_expires_at=r["lease_expires_at"],
        reset_count=r["reset_count"],
        outcome=load(r["outcome"]),
        artifact_receipts=_receipts(r["artifact_receipts"]),
        execution_error=load(r["execution_error"]),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        completed_at=r["completed_at"],
        last_worker_id=r["last_worker_id"],
    )


def claimed(r: asyncpg.Record) -> ClaimedJob:
    return ClaimedJob(
        job_id=r["job_id"],
        attempt_id=r["attempt_id"],
        lease_expires_at=r["lease_expires_at"],
        value=r["value"],
        external_id=r["external_id"],
        spec=load(r["spec"]) or {},
    )


_KNOWN_ROLES = frozenset(r.value for r in Role)


def roles(values: list[str] | None) -> tuple[Role, ...]:
    """Stored roles, sorted; unknown strings (never written by us) are ignored."""
    return tuple(sorted(Role(v) for v in set(values or ()) if v in _KNOWN_ROLES))


def user(r: asyncpg.Record) -> User:
    return User(
        id=r["id"],
        status=UserStatus(r["status"]),
        roles=roles(r["roles"]),
        github_user_id=r["github_user_id"],
        github_login=r["github_login"],
        github_avatar_url=r["github_avatar_url"],
        last_login_at=r["last_login_at"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )
