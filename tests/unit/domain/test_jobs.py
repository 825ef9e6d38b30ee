"""A job's type and the claim filter on it (spec §1.7.11, §2.4)."""

from __future__ import annotations

import pytest

from hq_domain.jobs import Job, JobStatus, job_type, type_accepted


@pytest.mark.parametrize(
    ("spec", "want"),
    [({}, "seed"), ({"type": None}, "seed"), ({"type": "asset"}, "asset"),
     ({"type": "seed", "via": "x"}, "seed")],
)  # fmt: skip
def test_job_type_defaults_to_seed(spec: dict[str, object], want: str) -> None:
    assert job_type(spec) == want
    job = Job(1, "p", "v", None, spec, 0, JobStatus.TODO, None, None, None, 0, None, [], None,
              0, 0, None)  # fmt: skip
    assert job.effective_type == want


@pytest.mark.parametrize(
    ("kind", "accept", "ok"),
    [("seed", (), True), ("asset", (), True), ("seed", ("seed",), True),
     ("seed", ("asset",), False), ("asset", ("seed",), False),
     ("asset", ("seed", "asset"), True)],
)  # fmt: skip
def test_type_accepted(kind: str, accept: tuple[str, ...], ok: bool) -> None:
    assert type_accepted(kind, accept) is ok
