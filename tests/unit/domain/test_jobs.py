"""A job's type and the claim filter on it (spec §1.7.11, §2.4); JobSpec's fast constructor."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, asdict, fields, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.jobs import Job, JobSpec, JobStatus, job_type, type_accepted


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


@given(
    value=st.text(min_size=1, max_size=50),
    id=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
    hops=st.integers(min_value=0, max_value=10**6),
)
def test_plain_spec_is_the_constructor_s_object(value: str, id: str | None, hops: int) -> None:
    fast = JobSpec.plain(value, id, hops)
    slow = JobSpec(value, id, None, None, hops)
    assert type(fast) is JobSpec
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    with pytest.raises(FrozenInstanceError):
        fast.value = "other"  # type: ignore[misc]
    assert replace(fast, random_key=7) == JobSpec(value, id, None, None, hops, None, 7)


def test_plain_spec_sets_every_field() -> None:
    # A field added to JobSpec must be given a value by plain() too (an unset slot would raise
    # AttributeError on read instead of holding its default).
    spec = JobSpec.plain("v", None, 0)
    assert {f.name: getattr(spec, f.name) for f in fields(JobSpec)} == asdict(JobSpec("v"))
