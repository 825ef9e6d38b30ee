"""Retry decisions (spec §6.2, §6.3). Pure: they return a delay in seconds or ``None``."""

from __future__ import annotations

import threading

from hq_adapters.client.errors import APIError, NetworkError

BACKOFF_START = 1.0
BACKOFF_MAX = 60.0
# time.sleep/Event.wait reject larger timeouts; retry_after_ms can be huge (qps 1e-300).
_MAX_DELAY = threading.TIMEOUT_MAX / 1.1


def jittered(delay: float, u: float) -> float:
    """``delay × (1 + U[0, 0.1))`` for ``u`` drawn from ``U[0, 1)``."""
    return delay + u * delay / 10


def rate_limit_delay(error: BaseException, u: float) -> float | None:
    """The reference SDK's only retry: HTTP 429, ``retryable`` and ``retry_after_ms > 0``."""
    if (
        isinstance(error, APIError)
        and error.status == 429
        and error.retryable
        and error.retry_after_ms > 0
    ):
        return jittered(min(error.retry_after_ms / 1000, _MAX_DELAY), u)
    return None


class Backoff:
    """The Go SDK's retry rule for the policy fetch and claims.

    Network errors, HTTP ≥ 500 and retryable 429s are retried. The delay is the server's
    ``retry_after_ms`` when positive, otherwise 1 s doubling per backoff use up to 1 min;
    every delay gets up to +10 % jitter. Other errors (401, 403, 404, 409, 426, …) are final.
    """

    def __init__(self) -> None:
        self._next = BACKOFF_START

    def delay(self, error: BaseException, u: float) -> float | None:
        if isinstance(error, NetworkError):
            hinted = 0
        elif isinstance(error, APIError) and (
            error.status >= 500 or (error.status == 429 and error.retryable)
        ):
            hinted = error.retry_after_ms
        else:
            return None
        if hinted > 0:
            return jittered(min(hinted / 1000, _MAX_DELAY), u)
        base = self._next
        self._next = min(self._next * 2, BACKOFF_MAX)
        return jittered(base, u)
