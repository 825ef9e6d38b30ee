"""The create-project defaults have one home, :func:`hq_domain.projects.apply_put`: the
dashboard's create form and ``tracker put-project`` offer exactly what it applies."""

from __future__ import annotations

import inspect

from hq_apps.cli import tracker
from hq_apps.web.project_pages import project_form_values
from hq_domain.projects import ProjectPut, apply_put

NEW = apply_put("p", None, ProjectPut(status="active"), 0)


def test_create_form_prefills_the_domain_defaults() -> None:
    assert project_form_values(None) == {
        "project_id": "",
        "status": "active",
        "identity_mode": NEW.identity_mode.value,
        "claim_order": NEW.claim_order.value,
        "dispatch_qps": "",
        "worker_claim_qps": "",
        "max_jobs_per_claim": str(NEW.max_jobs_per_claim),
        "max_resets": str(NEW.max_resets),
        "recommended_lease_seconds": str(NEW.recommended_lease_seconds),
        "client_versions": "",
    }


def test_tracker_put_project_defaults_are_the_domain_defaults() -> None:
    params = inspect.signature(tracker.put_project).parameters
    for name in ("max_jobs_per_claim", "max_resets", "recommended_lease_seconds"):
        assert params[name].default == getattr(NEW, name), name
