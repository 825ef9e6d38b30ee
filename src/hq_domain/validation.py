"""Validation of every request-side limit in spec §1.2 with the spec's codes and messages.

The HTTP app, the source decoder and the CLIs call these after decoding; adapters can assume
their inputs passed. Functions return domain values or raise InvalidJob / InvalidRequest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from hq_domain import canonical
from hq_domain.errors import InvalidJob, InvalidRequest
from hq_domain.ids import is_id
from hq_domain.jobs import JOB_TYPES, ArtifactReceipt, ExecutionError, JobSpec, Outcome
from hq_domain.projects import MAX_CLAIM_JOBS, MAX_LEASE_SECONDS, IdentityMode
from hq_domain.storable import NUL, holds_nul
from hq_domain.worker import (
    MAX_BATCH_ITEMS,
    AttemptRef,
    ClaimRequest,
    CompleteItem,
    FailItem,
)

MAX_VALUE_BYTES = 8192
MAX_JSON_DEPTH = 128
DEPTH_MESSAGE = f"nested deeper than {MAX_JSON_DEPTH} levels"
MAX_OBJECT_BYTES = 8192
MAX_NORMALIZED_SPEC_BYTES = 32 * 1024
MAX_URI_BYTES = 4096
MAX_ERROR_MESSAGE_BYTES = 2048
MAX_RECEIPTS = 16
MAX_ACCEPT_TYPES = 16
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX = 2**63 - 1
_CHECKSUM_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}:(?:[0-9a-f]{2}){1,64}")


def utf8_len(text: str) -> int | None:
    """Byte length of valid UTF-8 text, or None when the string holds lone surrogates."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _bounded_text(text: object, max_bytes: int, *, min_bytes: int = 0) -> bool:
    if not isinstance(text, str):
        return False
    n = utf8_len(text)
    return n is not None and min_bytes <= n <= max_bytes


def _object_size_ok(obj: object) -> bool:
    try:
        return canonical.size(obj) <= MAX_OBJECT_BYTES
    except (ValueError, TypeError, RecursionError):
        return False


def json_depth(value: object, stop_after: int = MAX_JSON_DEPTH) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0, ``{}`` or ``[]`` is 1), walked
    without recursion; stops counting once past ``stop_after``.

    One rule for every free-form JSON value (job ``attr``, ``outcome.meta``, ``error.details``,
    source lines, dashboard forms): deeper than :data:`MAX_JSON_DEPTH` is refused with a 400.
    The reference accepts up to 10,000 levels; 128 leaves every real use room while keeping each
    recursive reader and renderer (msgspec, json, Jinja, PostgreSQL jsonb) far from its limit.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_after:
            return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def _too_deep(value: object) -> bool:
    return json_depth(value) > MAX_JSON_DEPTH


def validate_job_spec(
    *,
    value: object,
    id: object = None,
    type: object = None,
    via: object = None,
    hops: object = 0,
    attr: object = None,
    random_key: object = None,
) -> JobSpec:
    """One JobSpec (spec §1.2.2), in the spec's order: id, value, type, via, hops, attr, total.

    Empty ``id``/``type`` and ``hops == 0``/empty ``attr`` count as absent. The identity-mode
    rules are separate (:func:`check_identity_id`) because they come last.
    """
    return job_spec(value, id, type, via, hops, attr, random_key)


def job_spec(
    value: object, id: object, type: object, via: object, hops: object, attr: object,
    random_key: object,
) -> JobSpec:  # fmt: skip
    """:func:`validate_job_spec` with positional arguments, for the loops that validate a
    job per line or per array item (a keyword call costs about a third more)."""
    if (
        value.__class__ is str
        and type is via is attr is random_key is None
        and (hops is None or (hops.__class__ is int and hops >= 0))
        and 0 < len(value) <= _FAST_MAX_VALUE
        and value.isascii()
        and NUL not in value
        and (id is None or id == "" or is_id(id))
    ):
        # The common shape (an ASCII value, maybe an id): every check below passes, and the
        # normalized document is surely small (6 bytes per escaped character at most).
        return JobSpec.plain(value, id or None, hops or 0)  # type: ignore[arg-type]
    return checked_job_spec(
        value=value, id=id, type=type, via=via, hops=hops, attr=attr, random_key=random_key
    )


class JobFields(Protocol):
    """A decoded job as sent: the enqueue route's array items (read-only fields)."""

    @property
    def value(self) -> object: ...
    @property
    def id(self) -> object: ...
    @property
    def type(self) -> object: ...
    @property
    def via(self) -> object: ...
    @property
    def hops(self) -> object: ...
    @property
    def attr(self) -> object: ...
    @property
    def random_key(self) -> object: ...


def validate_jobs(items: Iterable[JobFields], mode: IdentityMode) -> list[JobSpec]:
    """Every item through :func:`job_spec` then :func:`check_identity_id`, in order: the
    error raised is the first job's that fails either, as a loop over both would raise."""
    specs: list[JobSpec] = []
    append = specs.append
    try:
        for j in items:
            append(job_spec(j.value, j.id, j.type, j.via, j.hops, j.attr, j.random_key))
    except InvalidJob:
        check_identity_ids(specs, mode)  # a job before the invalid one fails its identity rule
        raise
    check_identity_ids(specs, mode)
    return specs


def checked_job_spec(
    *,
    value: object,
    id: object = None,
    type: object = None,
    via: object = None,
    hops: object = 0,
    attr: object = None,
    random_key: object = None,
) -> JobSpec:
    """:func:`validate_job_spec` without its fast path: every check, in the spec's order."""
    if id not in (None, "") and not is_id(id):
        raise InvalidJob("id must be 1-128 ASCII bytes matching [A-Za-z0-9._:-]+")
    if not _bounded_text(value, MAX_VALUE_BYTES, min_bytes=1):
        raise InvalidJob("value must be valid UTF-8 and at most 8192 bytes")
    if NUL in value:  # type: ignore[operator]
        raise InvalidJob("value must not contain U+0000")
    if type not in (None, "") and type not in JOB_TYPES:
        raise InvalidJob("type must be seed or asset")
    if via is not None and not _bounded_text(via, MAX_VALUE_BYTES):
        raise InvalidJob("via must be valid UTF-8 and at most 8192 bytes")
    if via is not None and NUL in via:  # type: ignore[operator]
        raise InvalidJob("via must not contain U+0000")
    if hops is None:
        hops = 0
    if not isinstance(hops, int) or isinstance(hops, bool) or hops < 0:
        raise InvalidJob("hops must be non-negative")
    if attr is not None and not isinstance(attr, dict):
        raise InvalidJob("invalid attr: must be a JSON object")
    if attr and _too_deep(attr):
        raise InvalidJob(f"invalid attr: {DEPTH_MESSAGE}")
    if attr and not _object_size_ok(attr):
        raise InvalidJob("invalid attr: object exceeds 8192 bytes")
    if attr and holds_nul(attr):
        raise InvalidJob("invalid attr: must not contain U+0000")
    if random_key is not None and (
        not isinstance(random_key, int)
        or isinstance(random_key, bool)
        or not INT32_MIN <= random_key <= INT32_MAX
    ):
        raise InvalidJob("random_key must be a signed 32-bit integer")
    spec = JobSpec(
        value=value,  # type: ignore[arg-type]
        id=id or None,  # type: ignore[arg-type]
        type=type or None,  # type: ignore[arg-type]
        via=via,  # type: ignore[arg-type]
        hops=hops,
        attr=attr or None,  # type: ignore[arg-type]
        random_key=random_key,  # type: ignore[arg-type]
    )
    if not _surely_small(spec) and normalized_size(spec) > MAX_NORMALIZED_SPEC_BYTES:
        raise InvalidJob("normalized JobSpec exceeds 32 KiB")
    return spec


# Keys, quotes and separators of the normalized document, with room to spare.
_NORMALIZED_OVERHEAD = 96
# The longest ASCII value the fast path takes: escaped 6-fold with a 128-byte id and the
# overhead it still fits the normalized limit.
_FAST_MAX_VALUE = (MAX_NORMALIZED_SPEC_BYTES - 128 - _NORMALIZED_OVERHEAD) // 6


def _surely_small(spec: JobSpec) -> bool:
    """A cheap upper bound that lets typical jobs skip encoding the normalized document.

    Escaping turns one code point into at most 6 bytes (``\\u003c``); the id is ASCII.
    Jobs with ``attr`` take the exact path (their canonical size is already bounded at 8 KiB
    but re-encoding them is rare enough not to matter).
    """
    if spec.attr:
        return False
    bound = (
        6 * (len(spec.value) + len(spec.via or ""))
        + len(spec.id or "")
        + _NORMALIZED_OVERHEAD
    )
    return bound <= MAX_NORMALIZED_SPEC_BYTES


def normalized_size(spec: JobSpec) -> int:
    """Size of ``{"id","value","type"?,"via"?,"hops"?,"attr"?}`` with ``id`` always present."""
    doc: dict[str, Any] = {"id": spec.id or "", "value": spec.value}
    doc.update(spec.spec_fields())
    # Go emits struct fields in declaration order; sorting changes no byte count.
    return canonical.size(doc)


def check_identity_id(spec: JobSpec, mode: IdentityMode) -> None:
    """The identity-mode id presence rule (last step of JobSpec validation)."""
    if mode is IdentityMode.EXTERNAL_ID and not spec.id:
        raise InvalidJob("id is required for external_id projects")
    if mode is not IdentityMode.EXTERNAL_ID and spec.id:
        raise InvalidJob("id is allowed only for external_id projects")


def check_identity_ids(specs: Sequence[JobSpec], mode: IdentityMode) -> None:
    """:func:`check_identity_id` for a batch: the first failing job's error. One pass that
    only reads the ids when all pass (every id present, or none)."""
    if mode is IdentityMode.EXTERNAL_ID:
        if all(s.id for s in specs):
            return
    elif not any(s.id for s in specs):
        return
    for spec in specs:
        check_identity_id(spec, mode)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_outcome(kind: object, code: object, uri: object, meta: object) -> Outcome:
    if kind not in ("success", "http_error", "skipped"):
        raise InvalidRequest("outcome kind must be success, http_error, or skipped")
    if code is not None and (not _is_int(code) or not 0 <= code <= 999):  # type: ignore[operator]
        raise InvalidRequest("outcome code must be between 0 and 999")
    if uri is not None and not _bounded_text(uri, MAX_URI_BYTES):
        raise InvalidRequest("outcome URI exceeds 4096 bytes")
    if uri is not None and NUL in uri:  # type: ignore[operator]
        raise InvalidRequest("outcome URI must not contain U+0000")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidRequest("invalid outcome meta: must be a JSON object")
    if meta is not None and _too_deep(meta):
        raise InvalidRequest(f"invalid outcome meta: {DEPTH_MESSAGE}")
    if meta is not None and not _object_size_ok(meta):
        raise InvalidRequest("invalid outcome meta: object exceeds 8192 bytes")
    if meta is not None and holds_nul(meta):
        raise InvalidRequest("invalid outcome meta: must not contain U+0000")
    return Outcome(kind=kind, code=code, uri=uri, meta=meta)  # type: ignore[arg-type]


def validate_execution_error(code: object, message: object, details: object) -> ExecutionError:
    if not is_id(code, max_bytes=64):
        raise InvalidRequest("execution error code is invalid")
    if message is None:
        message = ""
    if not _bounded_text(message, MAX_ERROR_MESSAGE_BYTES) or NUL in message:  # type: ignore[operator]
        raise InvalidRequest("execution error message is invalid")
    if details is not None and not isinstance(details, dict):
        raise InvalidRequest("invalid execution error details: must be a JSON object")
    if details is not None and _too_deep(details):
        raise InvalidRequest(f"invalid execution error details: {DEPTH_MESSAGE}")
    if details is not None and not _object_size_ok(details):
        raise InvalidRequest("invalid execution error details: object exceeds 8192 bytes")
    if details is not None and holds_nul(details):
        raise InvalidRequest("invalid execution error details: must not contain U+0000")
    return ExecutionError(code=code, message=message, details=details)  # type: ignore[arg-type]


def validate_receipt(
    id: object, issuer: object, object_id: object, checksum: object, size_bytes: object, accepted_at: object
) -> ArtifactReceipt:
    ok = (
        is_id(id)
        and _bounded_text(issuer, 512, min_bytes=1)
        and _bounded_text(object_id, 1024, min_bytes=1)
        and NUL not in issuer  # type: ignore[operator]
        and NUL not in object_id  # type: ignore[operator]
        and isinstance(checksum, str)
        and _CHECKSUM_RE.fullmatch(checksum) is not None
        and _is_int(size_bytes)
        and 1 <= size_bytes <= INT64_MAX  # type: ignore[operator]
        and _is_int(accepted_at)
        and 1 <= accepted_at <= INT64_MAX  # type: ignore[operator]
    )
    if not ok:
        raise InvalidRequest("invalid artifact receipt")
    return ArtifactReceipt(id, issuer, object_id, checksum, size_bytes, accepted_at)  # type: ignore[arg-type]


def check_receipt_count(receipts: Sequence[object] | None) -> None:
    if receipts is not None and len(receipts) > MAX_RECEIPTS:
        raise InvalidRequest("at most 16 artifact receipts are allowed per job")


def validate_claim(
    worker_id: object,
    max_jobs: object,
    lease_seconds: object,
    accept_types: Sequence[object] | None,
    policy_version: object,
) -> ClaimRequest:
    """Spec §1.7.11."""
    types = list(accept_types or [])
    if (
        not is_id(worker_id)
        or not _is_int(max_jobs)
        or not 1 <= max_jobs <= MAX_CLAIM_JOBS  # type: ignore[operator]
        or not _is_int(lease_seconds)
        or not 1 <= lease_seconds <= MAX_LEASE_SECONDS  # type: ignore[operator]
        or len(types) > MAX_ACCEPT_TYPES
        or not _is_int(policy_version)
        or policy_version < 1  # type: ignore[operator]
    ):
        raise InvalidRequest("invalid claim request")
    if any(t not in JOB_TYPES for t in types):
        raise InvalidRequest("accept_types may contain only seed or asset")
    return ClaimRequest(worker_id, max_jobs, lease_seconds, tuple(types), policy_version)  # type: ignore[arg-type]


def check_batch_shape(worker_id: object, n_items: int, message: str) -> None:
    """Batch-level checks shared by complete/fail/extend: worker ID and 1..256 items."""
    if not is_id(worker_id) or not 1 <= n_items <= MAX_BATCH_ITEMS:
        raise InvalidRequest(message)


def check_attempt_ref(job_id: object, attempt_id: object) -> AttemptRef:
    if not _is_int(job_id) or job_id < 1 or job_id > INT64_MAX or not is_id(attempt_id):  # type: ignore[operator]
        raise InvalidRequest("invalid job or attempt ID")
    return AttemptRef(job_id, attempt_id)  # type: ignore[arg-type]


class OutcomeFields(Protocol):
    """The raw fields of a completion's outcome (the API passes its decoded wire struct)."""

    @property
    def kind(self) -> object: ...
    @property
    def code(self) -> object: ...
    @property
    def uri(self) -> object: ...
    @property
    def meta(self) -> object: ...


class ReceiptFields(Protocol):
    """The raw fields of one artifact receipt."""

    @property
    def id(self) -> object: ...
    @property
    def issuer(self) -> object: ...
    @property
    def object_id(self) -> object: ...
    @property
    def checksum(self) -> object: ...
    @property
    def size_bytes(self) -> object: ...
    @property
    def accepted_at(self) -> object: ...


class ErrorFields(Protocol):
    """The raw fields of a failure's execution error."""

    @property
    def code(self) -> object: ...
    @property
    def message(self) -> object: ...
    @property
    def details(self) -> object: ...


def complete_item(
    job_id: object,
    attempt_id: object,
    outcome: OutcomeFields | None,
    receipts: Sequence[ReceiptFields] | None,
) -> CompleteItem:
    """One completion item (spec §1.7.12), checked in the reference's order: attempt
    reference, outcome (a missing one has no valid kind), receipt count, each receipt."""
    ref = check_attempt_ref(job_id, attempt_id)
    if outcome is None:
        valid_outcome = validate_outcome(None, None, None, None)
    else:
        valid_outcome = validate_outcome(outcome.kind, outcome.code, outcome.uri, outcome.meta)
    valid_receipts: tuple[ArtifactReceipt, ...] | None = None
    if receipts is not None:
        check_receipt_count(receipts)
        valid_receipts = tuple(
            validate_receipt(r.id, r.issuer, r.object_id, r.checksum, r.size_bytes, r.accepted_at)
            for r in receipts
        )
    return CompleteItem(ref.job_id, ref.attempt_id, valid_outcome, valid_receipts)


def fail_item(
    job_id: object, attempt_id: object, retryable: object, error: ErrorFields | None
) -> FailItem:
    """One failure item (spec §1.7.13): attempt reference, then the execution error (a missing
    one has no valid code); an absent ``retryable`` is false."""
    ref = check_attempt_ref(job_id, attempt_id)
    if error is None:
        valid_error = validate_execution_error(None, None, None)
    else:
        valid_error = validate_execution_error(error.code, error.message, error.details)
    return FailItem(ref.job_id, ref.attempt_id, bool(retryable), valid_error)


def check_lease_seconds(seconds: object, message: str) -> int:
    if not _is_int(seconds) or not 1 <= seconds <= MAX_LEASE_SECONDS:  # type: ignore[operator]
        raise InvalidRequest(message)
    return seconds  # type: ignore[return-value]
