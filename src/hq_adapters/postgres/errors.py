"""Driver errors → domain errors, keyed on constraint names (STYLE §5).

Only violations a racing caller can provoke are translated; anything else is a bug and
propagates unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from hq_domain.errors import HqError, IdentityConflict, InternalError, NotFound
from hq_domain.identity import DIFFERENT_SPEC

_BY_CONSTRAINT: dict[str, HqError] = {
    # a project deleted while an enqueue or claim audit was writing under it
    "tracker_jobs_project_id_fkey": NotFound("project not found"),
    "tracker_worker_claim_buckets_project_id_fkey": NotFound("project not found"),
    # a user deleted while a worker mapping, token or session was being written
    "tracker_workers_user_id_fkey": NotFound("user or project not found"),
    "tracker_machine_tokens_user_id_fkey": NotFound("user not found"),
    "tracker_web_sessions_user_id_fkey": NotFound("user not found"),
    # identities inserted concurrently by another enqueue are handled by ON CONFLICT; these
    # can only fire from a path that bypasses it
    "tracker_jobs_external_id_uidx": IdentityConflict(DIFFERENT_SPEC),
    "tracker_jobs_value_digest_uidx": IdentityConflict(DIFFERENT_SPEC),
    "tracker_machine_tokens_token_hash_key": InternalError("machine token digest collision"),
}


def translate(exc: asyncpg.PostgresError) -> HqError | None:
    """The domain error for a constraint violation we understand, else None."""
    if isinstance(exc, asyncpg.IntegrityConstraintViolationError):
        proto = _BY_CONSTRAINT.get(getattr(exc, "constraint_name", None) or "")
        if proto is not None:
            return type(proto)(proto.message)
    return None


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise understood constraint violations as their domain error."""
    try:
        yield
    except asyncpg.PostgresError as exc:
        mapped = translate(exc)
        if mapped is None:
            raise
        raise mapped from exc
