"""The gate row's Principal and Project are remembered by their whole content
(hq_adapters.postgres.worker_binding): the same row gives the same object, a changed row a new
one, and the memo stays bounded."""

from __future__ import annotations

import json

import pytest

from hq_adapters.postgres import worker_binding
from hq_domain.projects import ClaimOrder, ProjectStatus
from hq_domain.users import Role, UserStatus

PROJECT = {
    "id": "p",
    "status": "active",
    "identity_mode": "none",
    "created_at": 1,
    "updated_at": 2,
    "claim_order": "fifo",
    "dispatch_qps": 25,
    "worker_claim_qps": None,
    "max_jobs_per_claim": 256,
    "policy_version": 3,
    "dispatch_tokens": None,
    "dispatch_refilled_at_ns": None,
    "client_versions": ["b", "a"],
    "max_resets": 3,
    "recommended_lease_seconds": 300,
}


def _row(**project: object) -> dict[str, object]:
    return {
        "user_id": "u",
        "user_status": "active",
        "user_roles": ["worker", "admin", "nonsense"],
        "project": json.dumps({**PROJECT, **project}, separators=(",", ":")),
    }


@pytest.fixture(autouse=True)
def _empty_memo() -> None:
    worker_binding._principals.clear()
    worker_binding._projects.clear()


def test_the_same_rows_give_the_same_objects() -> None:
    principal, project = worker_binding.gate_row(_row())
    assert principal is not None and project is not None
    assert principal.user_id == "u" and principal.status is UserStatus.ACTIVE
    assert principal.roles == frozenset({Role.WORKER, Role.ADMIN})
    assert project.status is ProjectStatus.ACTIVE and project.claim_order is ClaimOrder.FIFO
    assert project.dispatch_qps == 25.0 and isinstance(project.dispatch_qps, float)
    assert project.client_versions == ("a", "b")
    again = worker_binding.gate_row(_row())
    assert again[0] is principal and again[1] is project


def test_a_changed_row_is_read_anew() -> None:
    _, project = worker_binding.gate_row(_row())
    _, changed = worker_binding.gate_row(_row(status="draining", policy_version=4))
    assert changed is not project
    assert changed is not None and changed.status is ProjectStatus.DRAINING
    row = {**_row(), "user_status": "suspended", "user_roles": ["worker"]}
    principal, _ = worker_binding.gate_row(row)
    assert principal is not None and principal.status is UserStatus.SUSPENDED
    assert principal.roles == frozenset({Role.WORKER})
    assert worker_binding.gate_row({**row, "user_id": None, "project": None}) == (None, None)


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_binding, "MEMO_ENTRIES", 3)
    for version in range(10):
        worker_binding.gate_row(_row(policy_version=version))
        assert len(worker_binding._projects) <= 3
