"""Claim planning and the small worker-side rules (spec §2.4, §2.9)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hq_domain.projects import ClaimOrder, ProjectPut, apply_put
from hq_domain.worker import bucket_start_ms, order_key, plan_claim

S = 1_000_000_000
T0 = 1_700_000_000 * S


def project(**over: object):  # type: ignore[no-untyped-def]
    return apply_put("p", None, ProjectPut(**{"status": "active", **over}), 1)  # type: ignore[arg-type]


def test_plan_unlimited_clamps_to_project_max() -> None:
    plan = plan_claim(project(max_jobs_per_claim=10), 256, T0)
    assert (plan.limit, plan.tokens) == (10, None)
    assert plan_claim(project(), 5, T0).limit == 5


def test_plan_fresh_bucket() -> None:
    assert plan_claim(project(dispatch_qps=2.5), 256, T0).limit == 1
    assert plan_claim(project(dispatch_qps=2000), 256, T0).limit == 200
    plan = plan_claim(project(dispatch_qps=1e300), 256, T0)
    assert (plan.limit, plan.tokens) == (256, 256)
    assert plan_claim(project(dispatch_qps=2000, max_jobs_per_claim=50), 256, T0).limit == 50


def test_plan_uses_stored_bucket() -> None:
    p = replace(project(dispatch_qps=2.5), dispatch_tokens=0.0, dispatch_refilled_at_ns=T0)
    plan = plan_claim(p, 5, T0 + S // 10)
    assert plan.limit == 0 and plan.tokens == pytest.approx(0.25)
    assert plan_claim(p, 5, T0 + S).limit == 1


def test_order_keys() -> None:
    assert order_key(ClaimOrder.FIFO, 10, -5, 3) == (10, 3)
    assert order_key(ClaimOrder.RANDOM, 10, -5, 3) == (-5, 3)
    rows = [(10, 9, 1), (10, 9, 0), (5, 100, 2)]  # (created_at, random_key, job_id)
    fifo = sorted(rows, key=lambda r: order_key(ClaimOrder.FIFO, *r))
    assert [r[2] for r in fifo] == [2, 0, 1]
    rand = sorted(rows, key=lambda r: order_key(ClaimOrder.RANDOM, *r))
    assert [r[2] for r in rand] == [0, 1, 2]


def test_bucket_start_ms() -> None:
    assert bucket_start_ms(1_700_000_059_999) == 1_700_000_040_000
    assert bucket_start_ms(120_000) == 120_000
    assert bucket_start_ms(119_999) == 60_000


def test_gate_passes_exactly_when_the_gate_raises_nothing() -> None:
    from hq_domain.users import Principal, Role, UserStatus
    from hq_domain.worker import gate_passes

    p = project(client_versions=["v1"])
    ok = Principal("u", UserStatus.ACTIVE, frozenset({Role.WORKER}))
    assert gate_passes(ok, p, "p", "v1")
    assert not gate_passes(None, p, "p", "v1")  # 401
    assert not gate_passes(ok, p, "p 1", "v1")  # 400 project id
    assert not gate_passes(replace(ok, user_id="u x"), p, "p", "v1")  # 400 user id
    assert not gate_passes(ok, None, "p", "v1")  # 404
    assert not gate_passes(replace(ok, status=UserStatus.SUSPENDED), p, "p", "v1")  # 403
    assert not gate_passes(replace(ok, roles=frozenset({Role.ADMIN})), p, "p", "v1")  # 403
    assert not gate_passes(ok, p, "p", "v1 ")  # 426: exact match only
    assert not gate_passes(ok, p, "p", "")
    assert not gate_passes(ok, project(client_versions=[]), "p", "v1")
