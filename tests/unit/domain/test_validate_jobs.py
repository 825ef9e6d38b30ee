"""validate_jobs (the enqueue route's batch) raises exactly what validating job after job,
each followed by its identity rule, would raise, and returns the same specs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.errors import InvalidJob
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode
from hq_domain.validation import check_identity_id, validate_job_spec, validate_jobs


@dataclass
class Item:
    value: object = "v"
    id: object = None
    type: object = None
    via: object = None
    hops: object = None
    attr: object = None
    random_key: object = None


def one_by_one(items: list[Item], mode: IdentityMode) -> list[JobSpec] | str:
    out = []
    try:
        for i in items:
            spec = validate_job_spec(value=i.value, id=i.id, type=i.type, via=i.via,
                                     hops=i.hops, attr=i.attr, random_key=i.random_key)  # fmt: skip
            check_identity_id(spec, mode)
            out.append(spec)
    except InvalidJob as exc:
        return exc.message
    return out


def batch(items: list[Item], mode: IdentityMode) -> list[JobSpec] | str:
    try:
        return validate_jobs(items, mode)
    except InvalidJob as exc:
        return exc.message


items = st.builds(
    Item,
    value=st.sampled_from(["https://e/1", "", "é", "a\x00", "x" * 9000, None, 3]),
    id=st.sampled_from([None, "", "j1", "bad id", 5]),
    type=st.sampled_from([None, "", "seed", "asset", "other"]),
    via=st.sampled_from([None, "", "https://v/"]),
    hops=st.sampled_from([None, 0, 2, -1, True]),
    attr=st.sampled_from([None, {}, {"k": 1}, []]),
    random_key=st.sampled_from([None, 0, -(2**31), 2**31]),
)


@given(st.lists(items, max_size=6), st.sampled_from(list(IdentityMode)))
def test_same_as_one_job_after_another(jobs: list[Item], mode: IdentityMode) -> None:
    assert batch(jobs, mode) == one_by_one(jobs, mode)


def test_an_earlier_identity_error_comes_before_a_later_invalid_job() -> None:
    jobs = [Item(value="a", id="j1"), Item(value="")]
    assert batch(jobs, IdentityMode.NONE) == "id is allowed only for external_id projects"
    assert batch(jobs[::-1], IdentityMode.NONE).startswith("value must be")


@pytest.mark.parametrize("mode", list(IdentityMode))
def test_the_common_shape(mode: IdentityMode) -> None:
    jobs = [Item(value=f"https://e/{n}", id=f"j{n}" if mode is IdentityMode.EXTERNAL_ID else None)
            for n in range(5)]  # fmt: skip
    assert batch(jobs, mode) == one_by_one(jobs, mode)
