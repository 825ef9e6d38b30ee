"""Identity modes: in-request collapse and stored-row comparison (spec §2.6–2.7)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.errors import IdentityConflict
from hq_domain.identity import (
    CONFLICTING_KEYS,
    DIFFERENT_SPEC,
    DIGEST_COLLISION,
    assign_random_key,
    check_stored,
    collapse_batch,
    identity_key,
    json_equal,
    new_random_key,
    spec_text,
)
from hq_domain.ids import unique_value_digest
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode

EXT, UNIQ, NONE = IdentityMode.EXTERNAL_ID, IdentityMode.UNIQUE_VALUE, IdentityMode.NONE


def conflict(message: str, fn, *args: object) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IdentityConflict) as exc:
        fn(*args)
    assert exc.value.message == message
    assert (exc.value.code, exc.value.status) == ("identity_conflict", 409)


def test_identity_key() -> None:
    job = JobSpec(value="v", id="a")
    assert identity_key(job, EXT) == "a"
    assert identity_key(JobSpec(value="v"), UNIQ) == unique_value_digest("v")
    assert identity_key(job, NONE) is None


# --- collapse within one request -------------------------------------------------------------


def test_collapse_keeps_first_position() -> None:
    jobs = [JobSpec("1", id="a"), JobSpec("2", id="b"), JobSpec("1", id="a"), JobSpec("3", id="c")]
    assert collapse_batch(jobs, EXT) == [jobs[0], jobs[1], jobs[3]]


def test_collapse_unique_value() -> None:
    jobs = [JobSpec("x"), JobSpec("y"), JobSpec("x")]
    assert collapse_batch(jobs, UNIQ) == [JobSpec("x"), JobSpec("y")]


def test_none_mode_never_collapses() -> None:
    jobs = [JobSpec("x"), JobSpec("x", random_key=1), JobSpec("x", type="asset")]
    assert collapse_batch(jobs, NONE) == jobs


def test_later_explicit_key_is_adopted_in_first_position() -> None:
    jobs = [JobSpec("1", id="a"), JobSpec("2", id="b"), JobSpec("1", id="a", random_key=7)]
    assert collapse_batch(jobs, EXT) == [JobSpec("1", id="a", random_key=7), jobs[1]]


def test_first_explicit_key_kept_when_later_absent() -> None:
    jobs = [JobSpec("x", random_key=5), JobSpec("x")]
    assert collapse_batch(jobs, UNIQ) == [JobSpec("x", random_key=5)]


def test_equal_explicit_keys_collapse() -> None:
    jobs = [JobSpec("x", random_key=5), JobSpec("x", random_key=5)]
    assert collapse_batch(jobs, UNIQ) == [jobs[0]]


def test_conflicting_keys() -> None:
    conflict(
        CONFLICTING_KEYS,
        collapse_batch,
        [JobSpec("x", random_key=1), JobSpec("x", random_key=2)],
        UNIQ,
    )
    # an adopted key counts as explicit for later copies
    jobs = [
        JobSpec("1", id="a"),
        JobSpec("1", id="a", random_key=1),
        JobSpec("1", id="a", random_key=2),
    ]
    conflict(CONFLICTING_KEYS, collapse_batch, jobs, EXT)


def test_external_id_different_value() -> None:
    conflict(DIFFERENT_SPEC, collapse_batch, [JobSpec("1", id="a"), JobSpec("2", id="a")], EXT)


@pytest.mark.parametrize(
    "other",
    [
        JobSpec("1", id="a", type="asset"),
        JobSpec("1", id="a", via=""),
        JobSpec("1", id="a", hops=1),
        JobSpec("1", id="a", attr={"k": 1}),
    ],
)
def test_different_spec(other: JobSpec) -> None:
    conflict(DIFFERENT_SPEC, collapse_batch, [JobSpec("1", id="a"), other], EXT)


def test_type_as_sent_seed_vs_absent_differ() -> None:
    conflict(DIFFERENT_SPEC, collapse_batch, [JobSpec("v", type="seed"), JobSpec("v")], UNIQ)
    conflict(
        DIFFERENT_SPEC,
        collapse_batch,
        [JobSpec("v", id="a"), JobSpec("v", id="a", type="seed")],
        EXT,
    )


def test_spec_compared_canonically() -> None:
    a = JobSpec("v", attr={"x": 1, "y": [1, {"b": 2, "a": 1}]})
    b = JobSpec("v", attr={"y": [1, {"a": 1, "b": 2}], "x": 1})
    assert spec_text(a) == spec_text(b)
    assert collapse_batch([a, b], UNIQ) == [a]


def test_value_checked_before_spec_and_keys() -> None:
    jobs = [JobSpec("1", id="a", random_key=1), JobSpec("2", id="a", type="asset", random_key=2)]
    conflict(DIFFERENT_SPEC, collapse_batch, jobs, EXT)
    jobs = [JobSpec("1", id="a", random_key=1), JobSpec("1", id="a", type="asset", random_key=2)]
    conflict(DIFFERENT_SPEC, collapse_batch, jobs, EXT)


def test_unique_value_digest_collision_message() -> None:
    """A different value under the same key (only possible with a real SHA-256 collision)
    reports ``value digest collision``; simulate it by patching the key function."""
    import hq_domain.identity as identity

    original = identity.unique_value_digest
    identity.unique_value_digest = lambda _v: b"same"  # type: ignore[assignment]
    try:
        conflict(DIGEST_COLLISION, collapse_batch, [JobSpec("x"), JobSpec("y")], UNIQ)
    finally:
        identity.unique_value_digest = original


# --- against stored rows ---------------------------------------------------------------------


def test_check_stored_accepts_identical() -> None:
    job = JobSpec("v", id="a", type="asset", via="", hops=2, attr={"n": 1.5, "s": [True, None]})
    check_stored(
        EXT,
        "v",
        {"attr": {"s": [True, None], "n": 1.5}, "hops": 2, "via": "", "type": "asset"},
        job,
    )


def test_check_stored_ignores_random_key() -> None:
    check_stored(UNIQ, "v", {}, JobSpec("v", random_key=123))


def test_check_stored_number_spelling_ignored() -> None:
    check_stored(EXT, "v", {"attr": {"n": 1.0}}, JobSpec("v", id="a", attr={"n": 1}))


def test_check_stored_value_mismatch() -> None:
    conflict(DIFFERENT_SPEC, check_stored, EXT, "old", {}, JobSpec("new", id="a"))
    conflict(DIGEST_COLLISION, check_stored, UNIQ, "old", {}, JobSpec("new"))


@pytest.mark.parametrize(
    ("stored", "job"),
    [
        ({}, JobSpec("v", type="seed")),
        ({"type": "seed"}, JobSpec("v")),
        ({"attr": {"b": True}}, JobSpec("v", attr={"b": 1})),
        ({"attr": {"b": 0}}, JobSpec("v", attr={"b": False})),
        ({"attr": {"a": [1, 2]}}, JobSpec("v", attr={"a": [2, 1]})),
        ({"attr": {"a": "1"}}, JobSpec("v", attr={"a": 1})),
        ({"attr": {"a": None}}, JobSpec("v", attr={"a": {}})),
        ({"via": ""}, JobSpec("v")),
        ({"hops": 1}, JobSpec("v", hops=2)),
    ],
)
def test_check_stored_different_spec(stored: dict[str, object], job: JobSpec) -> None:
    conflict(DIFFERENT_SPEC, check_stored, UNIQ, "v", stored, job)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        ("a", "a", True),
        ([1, [2]], [1.0, [2.0]], True),
        ([1], [1, 1], False),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ({"a": {"b": 1}}, {"a": {"b": 1.0}}, True),
        ({}, [], False),
        ("1", 1, False),
    ],
)
def test_json_equal(a: object, b: object, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


# --- random keys -------------------------------------------------------------------------------


def test_random_keys_cover_int32() -> None:
    keys = [new_random_key() for _ in range(2000)]
    assert all(-(2**31) <= k < 2**31 for k in keys)
    assert any(k < 0 for k in keys) and any(k > 0 for k in keys)
    assert len(set(keys)) > 1990


def test_assign_random_key() -> None:
    assert assign_random_key(JobSpec("v", random_key=-(2**31))) == -(2**31)
    assert isinstance(assign_random_key(JobSpec("v")), int)


# --- properties --------------------------------------------------------------------------------

# A small universe so that repeats are frequent. Each identity always maps to the same value
# and spec, so collapse never conflicts unless random keys disagree.
ids_ = st.sampled_from(["a", "b", "c", "d"])
conflict_free = st.lists(st.tuples(ids_, st.one_of(st.none(), st.just(7))), max_size=20).map(
    lambda rows: [
        JobSpec("v" + i, id=i, type="asset" if i == "b" else None, random_key=k) for i, k in rows
    ]
)


@given(conflict_free)
def test_collapse_unique_keys_first_order_idempotent(jobs: list[JobSpec]) -> None:
    out = collapse_batch(jobs, EXT)
    keys = [j.id for j in out]
    assert len(keys) == len(set(keys))
    assert keys == list(dict.fromkeys(j.id for j in jobs))  # first-occurrence order
    assert collapse_batch(out, EXT) == out
    for j in out:
        copies = [c for c in jobs if c.id == j.id]
        explicit = {c.random_key for c in copies if c.random_key is not None}
        assert j.random_key == (explicit.pop() if explicit else None)
        assert (j.value, j.spec_fields()) == (copies[0].value, copies[0].spec_fields())


@given(st.lists(st.sampled_from(["x", "y", "z"]), max_size=20))
def test_collapse_unique_value_and_none_mode(values: list[str]) -> None:
    jobs = [JobSpec(v) for v in values]
    assert [j.value for j in collapse_batch(jobs, UNIQ)] == list(dict.fromkeys(values))
    assert collapse_batch(jobs, NONE) == jobs


@given(
    st.lists(
        st.tuples(
            ids_,
            st.sampled_from(["v1", "v2"]),
            st.sampled_from([None, "seed"]),
            st.one_of(st.none(), st.integers(0, 1)),
        ),
        max_size=12,
    )
)
def test_collapse_conflicts_exactly_when_copies_disagree(
    rows: list[tuple[str, str, str | None, int | None]],
) -> None:
    jobs = [JobSpec(v, id=i, type=t, random_key=k) for i, v, t, k in rows]
    groups: dict[str, list[JobSpec]] = {}
    for j in jobs:
        groups.setdefault(j.id or "", []).append(j)
    disagree = any(
        len({(c.value, c.type) for c in g}) > 1
        or len({c.random_key for c in g if c.random_key is not None}) > 1
        for g in groups.values()
    )
    if disagree:
        with pytest.raises(IdentityConflict):
            collapse_batch(jobs, EXT)
    else:
        out = collapse_batch(jobs, EXT)
        assert Counter(j.id for j in out) == Counter(groups.keys())


def test_assign_random_keys_keeps_explicit_keys_and_draws_the_rest() -> None:
    from hq_domain.identity import assign_random_keys

    jobs = [JobSpec("a", random_key=-(2**31)), JobSpec("b"), JobSpec("c", random_key=2**31 - 1)]
    jobs += [JobSpec(f"r{i}") for i in range(200)]
    keys = assign_random_keys(jobs)
    assert keys[0] == -(2**31) and keys[2] == 2**31 - 1
    drawn = keys[3:] + keys[1:2]
    assert all(-(2**31) <= k < 2**31 for k in drawn)
    assert len(set(drawn)) > 190 and any(k < 0 for k in drawn) and any(k >= 0 for k in drawn)
    assert assign_random_keys([]) == []


def test_collapse_without_repeats_keeps_the_batch() -> None:
    jobs = [JobSpec(f"v{i}", id=f"i{i}") for i in range(10)]
    assert collapse_batch(jobs, IdentityMode.EXTERNAL_ID) == jobs
    with pytest.raises(IdentityConflict):
        collapse_batch([*jobs, JobSpec("other", id="i3")], IdentityMode.EXTERNAL_ID)
