"""Identity modes: enqueue dedup, in-batch collapse and conflict rules (spec §2.6–2.7)."""

from __future__ import annotations

import os
import secrets
from array import array
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hq_domain import canonical
from hq_domain.errors import IdentityConflict
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode

DIFFERENT_SPEC = "job identity already exists with a different spec"
DIGEST_COLLISION = "value digest collision"
CONFLICTING_KEYS = "job identity has conflicting random keys"


def identity_key(spec: JobSpec, mode: IdentityMode) -> str | bytes | None:
    """The dedup key of a job: its external id, its value digest, or None (no dedup)."""
    if mode is IdentityMode.EXTERNAL_ID:
        return spec.id
    if mode is IdentityMode.UNIQUE_VALUE:
        return unique_value_digest(spec.value)
    return None


def spec_text(spec: JobSpec) -> str:
    """Canonical stored-spec JSON, compared byte for byte within one request."""
    return canonical.dumps(spec.spec_fields())


def collapse_batch(jobs: Sequence[JobSpec], mode: IdentityMode) -> list[JobSpec]:
    """Collapse repeated identities within one request, keeping first positions.

    Raises IdentityConflict for a repeated identity whose value, spec or explicit random key
    differs. In ``none`` mode every job stands.
    """
    if mode is IdentityMode.NONE:
        return list(jobs)
    if mode is IdentityMode.EXTERNAL_ID and len({j.id for j in jobs}) == len(jobs):
        return list(jobs)  # the common case: no repeated id, nothing to collapse
    out: list[JobSpec] = []
    index: dict[str | bytes | None, int] = {}
    for job in jobs:
        key = identity_key(job, mode)
        at = index.get(key)
        if at is None:
            index[key] = len(out)
            out.append(job)
            continue
        first = out[at]
        if first.value != job.value:
            raise IdentityConflict(
                DIGEST_COLLISION if mode is IdentityMode.UNIQUE_VALUE else DIFFERENT_SPEC
            )
        if spec_text(first) != spec_text(job):
            raise IdentityConflict(DIFFERENT_SPEC)
        if first.random_key is not None and job.random_key is not None:
            if first.random_key != job.random_key:
                raise IdentityConflict(CONFLICTING_KEYS)
        elif first.random_key is None and job.random_key is not None:
            out[at] = replace(first, random_key=job.random_key)
    return out


def json_equal(a: Any, b: Any) -> bool:
    """JSON-value equality as jsonb sees it: key order and number spelling ignored,
    but booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def check_stored(mode: IdentityMode, stored_value: str, stored_spec: dict[str, Any], job: JobSpec) -> None:
    """An identity that already exists must carry the same value and spec (random key ignored)."""
    if stored_value != job.value:
        raise IdentityConflict(
            DIGEST_COLLISION if mode is IdentityMode.UNIQUE_VALUE else DIFFERENT_SPEC
        )
    if not json_equal(stored_spec, job.spec_fields()):
        raise IdentityConflict(DIFFERENT_SPEC)


def new_random_key() -> int:
    """Uniform over all 2^32 signed 32-bit values."""
    return secrets.randbits(32) - 2**31


def assign_random_key(job: JobSpec) -> int:
    return job.random_key if job.random_key is not None else new_random_key()


def assign_random_keys(jobs: Sequence[JobSpec]) -> list[int]:
    """:func:`assign_random_key` for a batch, drawing the generated keys from one
    ``os.urandom`` call (a syscall per job cost more than the rest of the key handling).
    Each generated key is 4 uniform random bytes read as a signed 32-bit integer."""
    generated = array("i", os.urandom(4 * len(jobs)))
    assert generated.itemsize == 4
    return [k if (k := j.random_key) is not None else generated[n] for n, j in enumerate(jobs)]
