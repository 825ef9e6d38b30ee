"""Domain errors. One root, one subclass per wire error code (spec §1.4).

Each error carries the data the HTTP layer needs to build the five-key envelope; the mapping
to a response happens in exactly one place in the app. Errors with a status other than the
code's default (405, 413, 415 variants of ``invalid_request``) pass ``status`` explicitly.
"""

from __future__ import annotations

from typing import Any, ClassVar


class HqError(Exception):
    """Root of every error the domain or an adapter raises on purpose."""

    code: ClassVar[str] = "internal_error"
    default_status: ClassVar[int] = 500
    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        retry_after_ms: int = 0,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else self.default_status
        self.retryable = self.default_retryable if retryable is None else retryable
        self.retry_after_ms = retry_after_ms
        self.details: dict[str, Any] = details if details is not None else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status})"


class InvalidRequest(HqError):
    code = "invalid_request"
    default_status = 400


class InvalidJob(HqError):
    code = "invalid_job"
    default_status = 400


class SourceFormatError(InvalidJob):
    """A ``jobs-jsonl-zstd-v1`` source (file or upload body) that does not decode (spec §3.2):
    bad zstd, a bad or invalid line, a size or job limit, a truncated or stalled upload. On the
    wire it is ``invalid_job`` with the message ``source format: <detail>``; the type lets the
    dashboard tell a bad file from an import the store refused."""

    def __init__(self, detail: str) -> None:
        super().__init__("source format: " + detail)


class InvalidMachineToken(HqError):
    code = "invalid_machine_token"
    default_status = 401


class PermissionDenied(HqError):
    code = "permission_denied"
    default_status = 403


class NotFound(HqError):
    code = "not_found"
    default_status = 404


class ClientUpgradeRequired(HqError):
    code = "client_upgrade_required"
    default_status = 426

    def __init__(self, client_version: str, client_versions: list[str]) -> None:
        super().__init__(
            "client version is not supported; upgrade required",
            details={"client_version": client_version, "client_versions": sorted(client_versions)},
        )


class ProjectDispatchRateLimited(HqError):
    code = "project_dispatch_rate_limited"
    default_status = 429
    default_retryable = True

    def __init__(self, project_id: str, policy_version: int, retry_after_ms: int) -> None:
        super().__init__(
            "project dispatch rate limit exceeded",
            retry_after_ms=retry_after_ms,
            details={"project_id": project_id, "policy_version": policy_version},
        )


class IdentityConflict(HqError):
    code = "identity_conflict"
    default_status = 409


class ProjectNotActive(HqError):
    code = "project_not_active"
    default_status = 409


class InternalError(HqError):
    code = "internal_error"
    default_status = 500


STALE_ATTEMPT_CODE = "stale_attempt"
STALE_ATTEMPT_MESSAGE = "attempt is stale, expired, or already finalized"
