"""Worker SDK errors.

The first four names match the reference Python SDK (``saveweb_hq``): ``SavewebHQError`` is the
root, ``TransportError`` means no valid HTTP/JSON answer, ``APIError(status, error)`` wraps the
tracker's error envelope. Everything else refines them, so ``except APIError`` keeps working.
"""

from __future__ import annotations

from typing import Any, ClassVar


class SavewebHQError(Exception):
    """Base class for SDK failures."""


class TransportError(SavewebHQError):
    """The tracker did not return a valid HTTP/JSON response."""


class NetworkError(TransportError):
    """No response at all (connection refused or reset, timeout): safe to retry idempotent steps."""


class ProtocolError(SavewebHQError, ValueError):
    """A well-formed response that breaks the protocol (wrong project echo, invalid policy).

    Also a ``ValueError``, which is what the reference SDK raises in these cases.
    """


class APIError(SavewebHQError):
    """A non-2xx response carrying the tracker's ``{"error": {...}}`` envelope."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        self.status = status
        self.error = error
        self.code = str(error.get("code", "internal_error"))
        self.message = str(error.get("message", "request failed"))
        self.retryable = bool(error.get("retryable", False))
        try:
            self.retry_after_ms = int(error.get("retry_after_ms", 0))
        except (TypeError, ValueError, OverflowError):
            self.retry_after_ms = 0
        details = error.get("details", {})
        self.details: dict[str, Any] = details if isinstance(details, dict) else {}
        super().__init__(f"HTTP {status}: {self.code}: {self.message}")


class InvalidMachineToken(APIError):
    """401: missing, unknown or revoked machine token."""


class PermissionDenied(APIError):
    """403: the token's user is not an active worker (or admin, on admin routes)."""


class NotFound(APIError):
    """404: unknown project (or user) on a worker route."""


class Conflict(APIError):
    """409: a domain conflict; see ``ProjectNotActive``."""


class ProjectNotActive(Conflict):
    """409 ``project_not_active``: the project is draining or archived."""


class ClientUpgradeRequired(APIError):
    """426: this ``client_version`` is not in the project's allowlist."""

    @property
    def client_version(self) -> str:
        value = self.details.get("client_version", "")
        return value if isinstance(value, str) else ""

    @property
    def client_versions(self) -> list[str]:
        """The versions the project accepts (sorted by the tracker)."""
        values = self.details.get("client_versions", [])
        if not isinstance(values, list):
            return []
        return [v for v in values if isinstance(v, str)]


class RateLimited(APIError):
    """429 ``project_dispatch_rate_limited``: retry after ``retry_after_ms``."""


class ServerError(APIError):
    """5xx: the tracker failed; idempotent steps retry these."""


_BY_STATUS: dict[int, type[APIError]] = {
    401: InvalidMachineToken,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    426: ClientUpgradeRequired,
    429: RateLimited,
}


def api_error(status: int, error: dict[str, Any]) -> APIError:
    """The most specific ``APIError`` subclass for a status and envelope."""
    if status == 409 and error.get("code") == "project_not_active":
        return ProjectNotActive(status, error)
    if status >= 500:
        return ServerError(status, error)
    return _BY_STATUS.get(status, APIError)(status, error)


class JobError(SavewebHQError):
    """A job handle can no longer be used; ``job`` is the handle."""

    reason: ClassVar[str] = "job is no longer held"

    def __init__(self, job: object = None, message: str | None = None) -> None:
        self.job = job
        super().__init__(message or self.reason)


class LeaseLost(JobError):
    """The lease expired locally, or the tracker rejected a renewal or mutation as stale."""

    reason = "lease lost"


class JobFinished(JobError):
    """The job was already completed or failed through this handle."""

    reason = "job already finished"


class QueueClosed(JobError):
    """The queue was closed; its held jobs were released (their leases simply run out)."""

    reason = "queue closed"
