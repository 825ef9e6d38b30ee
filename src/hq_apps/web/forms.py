"""Form decoding for the dashboard: project settings and the JSON job batch (spec §5.4).

Messages start with the spec's short text (``Project policy is invalid`` …) followed by the
domain's detail, so the re-rendered form tells the operator what to fix.
"""

from __future__ import annotations

import json
from typing import Any

from litestar.datastructures import FormMultiDict

from hq_domain.errors import HqError, InvalidRequest
from hq_domain.jobs import JobSpec
from hq_domain.projects import Project, ProjectPut, apply_put, validate_client_versions
from hq_domain.validation import DEPTH_MESSAGE, validate_job_spec

POLICY_INVALID = "Project policy is invalid"
VERSIONS_INVALID = "Client versions are invalid"
UPDATE_REJECTED = "Project update was rejected"
JOBS_INVALID = "Job batch is invalid"
ENQUEUE_REJECTED = "Enqueue was rejected"
MAX_FORM_JOBS = 256
JOB_KEYS = frozenset({"id", "value", "type", "via", "hops", "attr", "random_key"})


class FormError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def text(form: FormMultiDict, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _qps(form: FormMultiDict, name: str) -> float | None:
    raw = text(form, name)
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise FormError(f"{POLICY_INVALID}: {name} must be a number or blank") from None


def _int(form: FormMultiDict, name: str) -> int | None:
    raw = text(form, name)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise FormError(f"{POLICY_INVALID}: {name} must be an integer") from None


def client_versions(raw: str) -> tuple[str, ...]:
    """Newline-separated, trimmed, blanks skipped; then the domain's limits."""
    versions = [line.strip() for line in raw.splitlines() if line.strip()]
    try:
        return validate_client_versions(versions)
    except InvalidRequest as exc:
        raise FormError(f"{VERSIONS_INVALID}: {exc.message}") from None


def project_put(
    form: FormMultiDict, project_id: str, existing: Project | None, now_s: int, *, with_identity: bool
) -> ProjectPut:
    """Decode and pre-validate a project form with the same rule the store applies."""
    versions = client_versions(form.get("client_versions") or "")
    put = ProjectPut(
        status=text(form, "status"),
        identity_mode=text(form, "identity_mode") if with_identity else None,
        claim_order=text(form, "claim_order") or None,
        dispatch_qps=_qps(form, "dispatch_qps"),
        worker_claim_qps=_qps(form, "worker_claim_qps"),
        max_jobs_per_claim=_int(form, "max_jobs_per_claim"),
        max_resets=_int(form, "max_resets"),
        recommended_lease_seconds=_int(form, "recommended_lease_seconds"),
        client_versions=versions,
    )
    try:
        apply_put(project_id, existing, put, now_s)
    except InvalidRequest as exc:
        raise FormError(f"{POLICY_INVALID}: {exc.message}") from None
    return put


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def job_batch(raw: str) -> list[JobSpec]:
    """One JSON array of 1–256 job objects; unknown keys rejected, ``random_key`` allowed."""
    try:
        doc = json.loads(raw, parse_constant=_no_constants)
    except ValueError as exc:
        raise FormError(f"{JOBS_INVALID}: invalid JSON: {exc}") from None
    except RecursionError:
        raise FormError(f"{JOBS_INVALID}: invalid JSON: {DEPTH_MESSAGE}") from None
    if not isinstance(doc, list) or not 1 <= len(doc) <= MAX_FORM_JOBS:
        raise FormError(f"{JOBS_INVALID}: expected a JSON array of 1-256 jobs")
    specs = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict):
            raise FormError(f"{JOBS_INVALID}: job {i + 1} is not an object")
        unknown = sorted(set(item) - JOB_KEYS)
        if unknown:
            raise FormError(f"{JOBS_INVALID}: job {i + 1}: unknown field {unknown[0]!r}")
        try:
            specs.append(validate_job_spec(**item))
        except HqError as exc:
            raise FormError(f"{JOBS_INVALID}: job {i + 1}: {exc.message}") from None
    return specs
