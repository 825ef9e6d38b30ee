"""Project PUT semantics (spec §1.7.2), client_versions (§1.2.7) and D1 status gates (§2.8)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.errors import InvalidRequest, ProjectNotActive
from hq_domain.projects import (
    ClaimOrder,
    IdentityMode,
    Project,
    ProjectPut,
    ProjectStatus,
    WorkerOp,
    apply_put,
    op_allowed,
    require_enqueue_allowed,
    require_op_allowed,
    validate_client_versions,
)

T0, T1 = 1_000, 2_000


def create(**over: object) -> Project:
    return apply_put("p1", None, ProjectPut(**{"status": "active", **over}), T0)  # type: ignore[arg-type]


def update(existing: Project, **over: object) -> Project:
    return apply_put(existing.id, existing, ProjectPut(**{"status": "active", **over}), T1)  # type: ignore[arg-type]


def rejects(
    message: str, existing: Project | None = None, project_id: str = "p1", **over: object
) -> None:
    with pytest.raises(InvalidRequest) as exc:
        apply_put(project_id, existing, ProjectPut(**{"status": "active", **over}), T1)  # type: ignore[arg-type]
    assert exc.value.message == message and exc.value.status == 400


# --- create ------------------------------------------------------------------------------------


def test_create_defaults() -> None:
    p = create()
    assert p == Project(
        id="p1",
        status=ProjectStatus.ACTIVE,
        identity_mode=IdentityMode.EXTERNAL_ID,
        claim_order=ClaimOrder.FIFO,
        dispatch_qps=None,
        worker_claim_qps=None,
        max_jobs_per_claim=256,
        max_resets=3,
        recommended_lease_seconds=300,
        client_versions=(),
        policy_version=1,
        created_at=T0,
        updated_at=T0,
        dispatch_tokens=None,
        dispatch_refilled_at_ns=None,
    )


def test_create_with_everything() -> None:
    p = create(
        status="draining",
        identity_mode="unique_value",
        claim_order="random",
        dispatch_qps=2.5,
        worker_claim_qps=1,
        max_jobs_per_claim=10,
        max_resets=0,
        recommended_lease_seconds=3600,
        client_versions=("b", "a"),
    )
    assert (p.status, p.identity_mode, p.claim_order) == ("draining", "unique_value", "random")
    assert (p.dispatch_qps, p.worker_claim_qps) == (2.5, 1.0)
    assert isinstance(p.worker_claim_qps, float)
    assert (p.max_jobs_per_claim, p.max_resets, p.recommended_lease_seconds) == (10, 0, 3600)
    assert p.client_versions == ("a", "b") and p.policy_version == 1


@pytest.mark.parametrize("mode", ["", None])
def test_create_empty_modes_default(mode: str | None) -> None:
    p = create(identity_mode=mode, claim_order=mode)
    assert (p.identity_mode, p.claim_order) == (IdentityMode.EXTERNAL_ID, ClaimOrder.FIFO)


def test_max_jobs_zero_means_default() -> None:
    assert create(max_jobs_per_claim=0).max_jobs_per_claim == 256


# --- validation messages ----------------------------------------------------------------------


@pytest.mark.parametrize("project_id", ["", "a b", "x" * 129])
def test_invalid_project_id(project_id: str) -> None:
    rejects("invalid project", project_id=project_id)


@pytest.mark.parametrize("status", ["", "ACTIVE", "deleted"])
def test_invalid_status(status: str) -> None:
    rejects("invalid project", status=status)


def test_invalid_identity_mode_and_claim_order() -> None:
    rejects("invalid project identity mode", identity_mode="unique")
    rejects("invalid project claim order", claim_order="lifo")


@pytest.mark.parametrize("qps", [0, -1, 0.0, float("inf"), float("nan"), True])
@pytest.mark.parametrize("field", ["dispatch_qps", "worker_claim_qps"])
def test_invalid_qps(field: str, qps: float) -> None:
    rejects("project QPS must be a positive finite number", **{field: qps})


@pytest.mark.parametrize("qps", [1e-300, 1e300, 0.001, 5])
def test_qps_any_magnitude(qps: float) -> None:
    assert create(dispatch_qps=qps, worker_claim_qps=qps).dispatch_qps == qps


@pytest.mark.parametrize(
    ("field", "bad", "good", "message"),
    [
        ("max_jobs_per_claim", [-1, 257], [1, 256], "max_jobs_per_claim must be between 1 and 256"),
        ("max_resets", [-1, 1001], [0, 1000], "max_resets must be between 0 and 1000"),
        (
            "recommended_lease_seconds",
            [0, -1, 3601],
            [1, 3600],
            "recommended_lease_seconds must be between 1 and 3600",
        ),
    ],
)
def test_integer_ranges(field: str, bad: list[int], good: list[int], message: str) -> None:
    for v in bad:
        rejects(message, **{field: v})
    for v in good:
        assert getattr(create(**{field: v}), field) == v


def test_validation_happens_before_identity_change_check() -> None:
    p = create()
    rejects("max_resets must be between 0 and 1000", p, identity_mode="none", max_resets=-1)


# --- client_versions ----------------------------------------------------------------------------


def test_client_versions_sorted_and_bounds() -> None:
    assert validate_client_versions(None) == ()
    assert validate_client_versions([]) == ()
    assert validate_client_versions(["2.0", "1.0", "1.10"]) == ("1.0", "1.10", "2.0")
    many = [f"v{i}" for i in range(64)]
    assert len(validate_client_versions(many)) == 64
    assert validate_client_versions(["é" * 64]) == ("é" * 64,)
    assert validate_client_versions(["a b"]) == ("a b",)


def test_client_versions_too_many() -> None:
    with pytest.raises(InvalidRequest, match=r"^client_versions must contain at most 64 versions$"):
        validate_client_versions([f"v{i}" for i in range(65)])


ENTRY_MSG = (
    "client_versions entries must be non-empty, at most 128 bytes, "
    "and have no surrounding whitespace"
)


@pytest.mark.parametrize(
    "entry",
    ["", "x" * 129, "é" * 65, " 1.0", "1.0 ", "\t1", "1\n", "1\u00a0", "\u30001", "\ud800", 1],
)
def test_client_versions_bad_entry(entry: object) -> None:
    with pytest.raises(InvalidRequest) as exc:
        validate_client_versions(["ok", entry])  # type: ignore[list-item]
    assert exc.value.message == ENTRY_MSG


def test_client_versions_control_separators_are_not_whitespace() -> None:
    # Go's strings.TrimSpace does not trim U+001C..U+001F (Python's str.strip does).
    assert validate_client_versions(["\x1c1.0\x1f"]) == ("\x1c1.0\x1f",)


def test_client_versions_unique() -> None:
    with pytest.raises(InvalidRequest, match=r"^client_versions must be unique$"):
        validate_client_versions(["a", "b", "a"])


def test_put_uses_client_version_rules() -> None:
    rejects("client_versions must be unique", client_versions=("a", "a"))


# --- update: full replacement, immutability, policy_version, bucket reset ---------------------


def configured() -> Project:
    p = create(
        identity_mode="unique_value",
        claim_order="random",
        dispatch_qps=2.5,
        worker_claim_qps=1.0,
        max_jobs_per_claim=10,
        max_resets=5,
        recommended_lease_seconds=60,
        client_versions=("1",),
    )
    return replace(p, dispatch_tokens=0.5, dispatch_refilled_at_ns=123)


def test_update_is_full_replacement() -> None:
    p = update(configured(), status="draining")
    assert p.status is ProjectStatus.DRAINING
    assert (p.dispatch_qps, p.worker_claim_qps) == (None, None)
    assert (p.max_jobs_per_claim, p.max_resets, p.recommended_lease_seconds) == (256, 3, 300)
    assert p.client_versions == ()
    # kept: identity, claim order, creation time
    assert (p.identity_mode, p.claim_order, p.created_at) == ("unique_value", "random", T0)
    assert p.updated_at == T1


def test_update_keeps_claim_order_and_identity_when_empty() -> None:
    for empty in ("", None):
        p = update(configured(), identity_mode=empty, claim_order=empty)
        assert (p.identity_mode, p.claim_order) == ("unique_value", "random")


def test_update_changes_claim_order_without_bump() -> None:
    old = configured()
    same_policy = dict(
        dispatch_qps=2.5,
        worker_claim_qps=1.0,
        max_jobs_per_claim=10,
        max_resets=5,
        recommended_lease_seconds=60,
        client_versions=("1",),
    )
    p = update(old, claim_order="fifo", status="archived", **same_policy)
    assert p.claim_order is ClaimOrder.FIFO and p.status is ProjectStatus.ARCHIVED
    assert p.policy_version == old.policy_version
    # the bucket is kept when dispatch_qps is unchanged
    assert (p.dispatch_tokens, p.dispatch_refilled_at_ns) == (0.5, 123)


def test_identity_mode_cannot_change() -> None:
    old = configured()
    for mode in ("none", "external_id"):
        rejects("project identity mode cannot be changed", old, identity_mode=mode)
    assert update(old, identity_mode="unique_value").identity_mode is IdentityMode.UNIQUE_VALUE


POLICY_FIELDS = {
    "dispatch_qps": 2.5,
    "worker_claim_qps": 1.0,
    "max_jobs_per_claim": 10,
    "max_resets": 5,
    "recommended_lease_seconds": 60,
    "client_versions": ("1",),
}
CHANGED = {
    "dispatch_qps": 3.0,
    "worker_claim_qps": None,
    "max_jobs_per_claim": 11,
    "max_resets": 4,
    "recommended_lease_seconds": 61,
    "client_versions": ("1", "2"),
}


def test_identical_put_does_not_bump() -> None:
    old = configured()
    p = update(old, **POLICY_FIELDS)
    assert p.policy_version == old.policy_version
    assert p.updated_at == T1


def test_client_versions_compared_after_sorting() -> None:
    old = update(configured(), **{**POLICY_FIELDS, "client_versions": ("b", "a")})
    again = update(old, **{**POLICY_FIELDS, "client_versions": ("a", "b")})
    assert again.policy_version == old.policy_version


@pytest.mark.parametrize("field", list(CHANGED))
def test_each_policy_field_bumps_once(field: str) -> None:
    old = configured()
    p = update(old, **{**POLICY_FIELDS, field: CHANGED[field]})
    assert p.policy_version == old.policy_version + 1
    p2 = update(p, **{**POLICY_FIELDS, field: CHANGED[field]})
    assert p2.policy_version == p.policy_version


def test_many_changes_bump_by_one() -> None:
    old = configured()
    assert update(old, **CHANGED).policy_version == old.policy_version + 1


def test_equal_qps_given_as_int_does_not_bump() -> None:
    old = update(configured(), **{**POLICY_FIELDS, "dispatch_qps": 3.0})
    p = update(old, **{**POLICY_FIELDS, "dispatch_qps": 3})
    assert p.policy_version == old.policy_version
    assert p.dispatch_tokens == old.dispatch_tokens


@pytest.mark.parametrize("new_qps", [3.0, None])
def test_dispatch_qps_change_resets_bucket(new_qps: float | None) -> None:
    p = update(configured(), **{**POLICY_FIELDS, "dispatch_qps": new_qps})
    assert (p.dispatch_tokens, p.dispatch_refilled_at_ns) == (None, None)


def test_dispatch_qps_from_null_resets_bucket() -> None:
    old = replace(create(), dispatch_tokens=0.0, dispatch_refilled_at_ns=5)
    p = update(old, dispatch_qps=1.0)
    assert (p.dispatch_tokens, p.dispatch_refilled_at_ns) == (None, None)
    assert p.policy_version == 2


def test_other_policy_change_keeps_bucket() -> None:
    p = update(configured(), **{**POLICY_FIELDS, "max_resets": 9})
    assert (p.dispatch_tokens, p.dispatch_refilled_at_ns) == (0.5, 123)


policy_values = st.fixed_dictionaries(
    {
        "dispatch_qps": st.sampled_from([None, 1.0, 2.5]),
        "worker_claim_qps": st.sampled_from([None, 1.0]),
        "max_jobs_per_claim": st.sampled_from([None, 0, 1, 256]),
        "max_resets": st.sampled_from([None, 0, 3]),
        "recommended_lease_seconds": st.sampled_from([None, 1, 300]),
        "client_versions": st.sampled_from([None, (), ("a",), ("b", "a"), ("a", "b")]),
        "status": st.sampled_from(["active", "draining", "archived"]),
        "claim_order": st.sampled_from([None, "fifo", "random"]),
    }
)


@given(st.lists(policy_values, min_size=1, max_size=8))
def test_policy_version_counts_effective_policy_changes(puts: list[dict[str, object]]) -> None:
    p = create()
    bumps = 0
    for put in puts:
        before = p
        p = apply_put("p1", p, ProjectPut(**put), T1)  # type: ignore[arg-type]
        fields = (
            "dispatch_qps",
            "worker_claim_qps",
            "max_jobs_per_claim",
            "max_resets",
            "recommended_lease_seconds",
            "client_versions",
        )
        changed = any(getattr(p, f) != getattr(before, f) for f in fields)
        bumps += changed
        assert p.policy_version == before.policy_version + changed
    assert p.policy_version == 1 + bumps


# --- D1 status gates ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", list(WorkerOp))
def test_op_allowed_table(op: WorkerOp) -> None:
    assert op_allowed(ProjectStatus.ACTIVE, op)
    assert op_allowed(ProjectStatus.DRAINING, op) is (op is not WorkerOp.CLAIM)
    assert not op_allowed(ProjectStatus.ARCHIVED, op)


def test_five_operations() -> None:
    assert {op.value for op in WorkerOp} == {"policy", "claim", "complete", "fail", "extend"}


def test_require_op_allowed_raises_409() -> None:
    draining = replace(create(), status=ProjectStatus.DRAINING)
    require_op_allowed(draining, WorkerOp.COMPLETE)
    with pytest.raises(ProjectNotActive) as exc:
        require_op_allowed(draining, WorkerOp.CLAIM)
    assert (exc.value.code, exc.value.status, exc.value.message) == (
        "project_not_active",
        409,
        "project is not active",
    )


def test_enqueue_refused_only_when_archived() -> None:
    p = create()
    require_enqueue_allowed(p)
    require_enqueue_allowed(replace(p, status=ProjectStatus.DRAINING))
    with pytest.raises(ProjectNotActive, match=r"^archived project cannot accept jobs$"):
        require_enqueue_allowed(replace(p, status=ProjectStatus.ARCHIVED))


def test_go_whitespace_is_python_whitespace_minus_file_separators() -> None:
    from hq_domain.projects import GO_WHITESPACE

    python_space = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert python_space - set(GO_WHITESPACE) == {"\x1c", "\x1d", "\x1e", "\x1f"}
    assert set(GO_WHITESPACE) <= python_space
