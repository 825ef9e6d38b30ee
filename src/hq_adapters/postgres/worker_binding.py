"""How the worker port binds its calls to the statements' parameters, and reads their rows back:
attempt ids, per-item results, the token digest, the gate row (token owner and project), and
the array parameters of complete/fail/extend. No I/O; :mod:`hq_adapters.postgres.worker` runs
the statements."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import asyncpg

from hq_adapters.postgres import rows
from hq_domain.ids import MAX_MACHINE_TOKEN_CHARS, b64url, machine_token_digest
from hq_domain.jobs import JobStatus
from hq_domain.projects import Project
from hq_domain.users import Principal, UserStatus
from hq_domain.worker import AttemptRef, CompleteItem, FailItem, ItemResult

_ATTEMPT_BYTES = 18


def new_attempt_ids(n: int) -> list[str]:
    """n ids in the format of :func:`hq_domain.ids.new_attempt_id`, from one urandom call."""
    raw = secrets.token_bytes(_ATTEMPT_BYTES * n)
    return [
        "at_" + b64url(raw[i : i + _ATTEMPT_BYTES]) for i in range(0, len(raw), _ATTEMPT_BYTES)
    ]


def item_results(items: Sequence[AttemptRef | CompleteItem | FailItem],
             statuses: Sequence[str | None], lease: int | None = None) -> list[ItemResult]:
    out = []
    for item, status in zip(items, statuses, strict=True):
        if status is None:
            out.append(ItemResult(item.job_id, item.attempt_id, False))
        else:
            out.append(ItemResult(item.job_id, item.attempt_id, True, JobStatus(status), lease))
    return out


def token_digest(token: str) -> bytes | None:
    if not token or len(token) > MAX_MACHINE_TOKEN_CHARS:
        return None
    return machine_token_digest(token)


# Every worker request reads the same token owner and project rows again and again; building
# the frozen Principal and Project from them (JSON, enums, sorting) was ~5 % of the tracker's
# CPU per request. They are remembered by their whole content, so a changed row is simply a
# new key: nothing to invalidate, across processes or replicas. Bounded: cleared when full.
MEMO_ENTRIES = 1024
_principals: dict[tuple[str, str, tuple[str, ...]], Principal] = {}
_projects: dict[str, Project] = {}


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()
    memo[key] = value


def principal_of(r: asyncpg.Record) -> Principal | None:
    user_id = r["user_id"]
    if user_id is None:
        return None
    key = (user_id, r["user_status"], tuple(r["user_roles"] or ()))
    found = _principals.get(key)
    if found is None:
        found = Principal(user_id, UserStatus(key[1]), frozenset(rows.roles(r["user_roles"])))
        _remember(_principals, key, found)
    return found


_FLOATS = ("dispatch_qps", "worker_claim_qps", "dispatch_tokens")


def _project_of_json(text: str) -> Project:
    found = _projects.get(text)
    if found is None:
        fields = rows.load(text)
        for name in _FLOATS:  # JSON writes 25.0 as 25
            if fields[name] is not None:
                fields[name] = float(fields[name])
        found = rows.project(fields)
        _remember(_projects, text, found)
    return found


def gate_row(r: asyncpg.Record) -> tuple[Principal | None, Project | None]:
    """Token owner and project of a tracker_gated_* row (the project row as JSON text, which
    only a gate that did not pass returns: migration 0020)."""
    text = r["project"]
    return principal_of(r), None if text is None else _project_of_json(text)


def complete_args(
    project_id: str, worker_id: str, items: Sequence[CompleteItem], now_s: int
) -> tuple[Any, ...]:
    return (
        project_id,
        worker_id,
        [i.job_id for i in items],
        [i.attempt_id for i in items],
        [rows.dump(i.outcome.to_json()) for i in items],
        [
            rows.dump(
                None if i.artifact_receipts is None
                else [r.to_json() for r in i.artifact_receipts]
            )
            for i in items
        ],
        now_s,
    )


def fail_args(
    project_id: str, worker_id: str, items: Sequence[FailItem], now_s: int
) -> tuple[Any, ...]:
    return (
        project_id,
        worker_id,
        [i.job_id for i in items],
        [i.attempt_id for i in items],
        [i.retryable for i in items],
        [rows.dump(i.error.to_json()) for i in items],
        now_s,
    )


def extend_args(
    project_id: str, worker_id: str, items: Sequence[AttemptRef], now_s: int,
    extend_seconds: int,
) -> tuple[Any, ...]:
    """The last element is the new lease end."""
    return (
        project_id,
        worker_id,
        [i.job_id for i in items],
        [i.attempt_id for i in items],
        now_s,
        now_s + extend_seconds,
    )
