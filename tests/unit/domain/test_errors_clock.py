"""Error codes/statuses (spec §1.4) and the clock port."""

from __future__ import annotations

import pytest

from hq_domain import errors
from hq_domain.clock import ManualClock, SystemClock, millis, seconds

CODES = {
    errors.InvalidRequest: ("invalid_request", 400, False),
    errors.InvalidJob: ("invalid_job", 400, False),
    errors.InvalidMachineToken: ("invalid_machine_token", 401, False),
    errors.PermissionDenied: ("permission_denied", 403, False),
    errors.NotFound: ("not_found", 404, False),
    errors.IdentityConflict: ("identity_conflict", 409, False),
    errors.ProjectNotActive: ("project_not_active", 409, False),
    errors.InternalError: ("internal_error", 500, False),
}


@pytest.mark.parametrize(("cls", "expected"), CODES.items())
def test_codes_and_statuses(cls: type[errors.HqError], expected: tuple[str, int, bool]) -> None:
    e = cls("msg")
    assert (e.code, e.status, e.retryable) == expected
    assert (e.message, e.retry_after_ms, e.details) == ("msg", 0, {})
    assert isinstance(e, errors.HqError)


def test_status_override_for_invalid_request_variants() -> None:
    assert errors.InvalidRequest("too big", status=413).status == 413


def test_upgrade_required() -> None:
    e = errors.ClientUpgradeRequired("0.1", ["2", "1"])
    assert (e.code, e.status) == ("client_upgrade_required", 426)
    assert e.message == "client version is not supported; upgrade required"
    assert e.details == {"client_version": "0.1", "client_versions": ["1", "2"]}


def test_rate_limited() -> None:
    e = errors.ProjectDispatchRateLimited("p", 3, 400)
    assert (e.code, e.status, e.retryable, e.retry_after_ms) == (
        "project_dispatch_rate_limited",
        429,
        True,
        400,
    )
    assert e.message == "project dispatch rate limit exceeded"
    assert e.details == {"project_id": "p", "policy_version": 3}


def test_stale_attempt_item_error() -> None:
    assert errors.STALE_ATTEMPT_CODE == "stale_attempt"
    assert errors.STALE_ATTEMPT_MESSAGE == "attempt is stale, expired, or already finalized"


def test_manual_clock() -> None:
    c = ManualClock(start_ns=5_000_000_000)
    assert c.now_ns() == 5_000_000_000
    c.advance(1.5)
    c.advance(ns=7)
    assert c.now_ns() == 6_500_000_007
    assert (seconds(c.now_ns()), millis(c.now_ns())) == (6, 6_500)
    c.set_ns(1)
    assert c.now_ns() == 1


def test_system_clock_is_epoch_ns() -> None:
    assert SystemClock().now_ns() > 1_600_000_000 * 10**9
