"""JobSpec validation (spec §1.2.2): every message, order, the 32 KiB normalized size rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.errors import InvalidJob
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode
from hq_domain.validation import (
    check_identity_id,
    checked_job_spec,
    normalized_size,
    validate_job_spec,
)

ID_MSG = "id must be 1-128 ASCII bytes matching [A-Za-z0-9._:-]+"
VALUE_MSG = "value must be valid UTF-8 and at most 8192 bytes"
TYPE_MSG = "type must be seed or asset"
VIA_MSG = "via must be valid UTF-8 and at most 8192 bytes"
HOPS_MSG = "hops must be non-negative"
ATTR_MSG = "invalid attr: object exceeds 8192 bytes"
TOTAL_MSG = "normalized JobSpec exceeds 32 KiB"


def invalid(message: str, **kwargs: object) -> None:
    with pytest.raises(InvalidJob) as exc:
        validate_job_spec(**kwargs)  # type: ignore[arg-type]
    assert exc.value.message == message
    assert exc.value.code == "invalid_job" and exc.value.status == 400


def test_minimal_spec() -> None:
    assert validate_job_spec(value="v") == JobSpec(value="v")


def test_full_spec_kept_as_sent() -> None:
    spec = validate_job_spec(
        value="v", id="j:1", type="asset", via="", hops=2, attr={"k": 1}, random_key=-5
    )
    assert spec == JobSpec(
        value="v", id="j:1", type="asset", via="", hops=2, attr={"k": 1}, random_key=-5
    )


def test_empties_mean_absent() -> None:
    spec = validate_job_spec(value="v", id="", type="", hops=0, attr={})
    assert (spec.id, spec.type, spec.hops, spec.attr) == (None, None, 0, None)
    assert spec.effective_type == "seed"
    assert spec.spec_fields() == {}


def test_null_hops_is_zero() -> None:
    assert validate_job_spec(value="v", hops=None).hops == 0


def test_type_seed_is_kept_as_sent() -> None:
    assert validate_job_spec(value="v", type="seed").spec_fields() == {"type": "seed"}


@pytest.mark.parametrize("bad", ["a b", "x" * 129, "ü", "a/b", 7])
def test_bad_id(bad: object) -> None:
    invalid(ID_MSG, value="v", id=bad)


@pytest.mark.parametrize("bad", ["", "x" * 8193, "é" * 4097, "\ud800", "a\udc00b", None, 3])
def test_bad_value(bad: object) -> None:
    invalid(VALUE_MSG, value=bad)


def test_value_limit_is_bytes() -> None:
    validate_job_spec(value="x" * 8192)
    validate_job_spec(value="é" * 4096)  # 8192 bytes


@pytest.mark.parametrize("bad", ["SEED", "other", " seed", 1])
def test_bad_type(bad: object) -> None:
    invalid(TYPE_MSG, value="v", type=bad)


@pytest.mark.parametrize("bad", ["x" * 8193, "\ud800", 5])
def test_bad_via(bad: object) -> None:
    invalid(VIA_MSG, value="v", via=bad)


def test_via_at_limit_and_empty() -> None:
    assert validate_job_spec(value="v", via="x" * 8192).via == "x" * 8192
    assert validate_job_spec(value="v", via="").spec_fields() == {"via": ""}


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
def test_bad_hops(bad: object) -> None:
    invalid(HOPS_MSG, value="v", hops=bad)


def test_attr_size_is_canonical_encoding() -> None:
    # {"k":"..."} is 8 bytes of framing.
    validate_job_spec(value="v", attr={"k": "x" * 8184})
    invalid(ATTR_MSG, value="v", attr={"k": "x" * 8185})
    # HTML escaping makes 1366 "<" (1366 raw bytes) encode to 8196 + 8 bytes.
    invalid(ATTR_MSG, value="v", attr={"k": "<" * 1366})


def test_attr_must_be_object() -> None:
    invalid("invalid attr: must be a JSON object", value="v", attr=[1])


def test_attr_with_non_finite_number_is_rejected() -> None:
    invalid(ATTR_MSG, value="v", attr={"k": float("nan")})


@pytest.mark.parametrize("bad", [2**31, -(2**31) - 1, True, 1.0])
def test_bad_random_key(bad: object) -> None:
    invalid("random_key must be a signed 32-bit integer", value="v", random_key=bad)


@pytest.mark.parametrize("ok", [2**31 - 1, -(2**31), 0])
def test_random_key_bounds(ok: int) -> None:
    assert validate_job_spec(value="v", random_key=ok).random_key == ok


def test_8192_lt_passes_value_check_but_fails_total() -> None:
    invalid(TOTAL_MSG, value="<" * 8192)


def test_total_size_boundary() -> None:
    # {"id":"","value":"..."} has 20 bytes of framing; each "&" costs 6.
    n = (32768 - 20) // 6  # 5458 ampersands: 32748 + 20 bytes
    spec = validate_job_spec(value="&" * n)
    assert normalized_size(spec) == 32768
    invalid(TOTAL_MSG, value="&" * n + "x")


def test_total_counts_every_field() -> None:
    big = "x" * 8000
    spec = JobSpec(value=big, id="i", type="asset", via=big, hops=3, attr={"a": big})
    expected = len(
        f'{{"attr":{{"a":"{big}"}},"hops":3,"id":"i","type":"asset","value":"{big}","via":"{big}"}}'
    )
    assert normalized_size(spec) == expected


def test_total_rule_sees_via_and_attr() -> None:
    lt = "<" * 4000  # 24000 canonical bytes
    validate_job_spec(value=lt, via="x" * 8000)
    invalid(TOTAL_MSG, value=lt, via="x" * 8192, attr={"a": "x" * 600})
    validate_job_spec(value=lt, attr={"a": "x" * 8000})
    invalid(TOTAL_MSG, value=lt, via="x" * 800, attr={"a": "x" * 8000})


def test_normalized_size_always_includes_id() -> None:
    assert normalized_size(JobSpec(value="v")) == len('{"id":"","value":"v"}')


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "a b", "value": "", "type": "x"}, ID_MSG),
        ({"value": "", "type": "x", "hops": -1}, VALUE_MSG),
        ({"value": "v", "type": "x", "via": 1}, TYPE_MSG),
        ({"value": "v", "via": 1, "hops": -1}, VIA_MSG),
        ({"value": "v", "hops": -1, "attr": {"k": "x" * 9000}}, HOPS_MSG),
        ({"value": "<" * 8192, "attr": {"k": "x" * 9000}}, ATTR_MSG),
    ],
)
def test_validation_order(kwargs: dict[str, object], message: str) -> None:
    invalid(message, **kwargs)


def test_identity_mode_rules() -> None:
    with_id, without = JobSpec(value="v", id="a"), JobSpec(value="v")
    check_identity_id(with_id, IdentityMode.EXTERNAL_ID)
    check_identity_id(without, IdentityMode.NONE)
    check_identity_id(without, IdentityMode.UNIQUE_VALUE)
    with pytest.raises(InvalidJob, match=r"^id is required for external_id projects$"):
        check_identity_id(without, IdentityMode.EXTERNAL_ID)
    for mode in (IdentityMode.NONE, IdentityMode.UNIQUE_VALUE):
        with pytest.raises(InvalidJob, match=r"^id is allowed only for external_id projects$"):
            check_identity_id(with_id, mode)


# The fast path must never accept a job the exact size check would reject.
from hypothesis import settings  # noqa: E402

from hq_domain import validation as _v  # noqa: E402

_escapy = st.text(alphabet=st.sampled_from("<>&\u2028\x01a\U0001f600é"), max_size=6000)


@settings(max_examples=300)
@given(
    value=_escapy.filter(bool),
    via=st.none() | _escapy,
    hops=st.integers(0, 2**63 - 1),
    job_type=st.sampled_from([None, "seed", "asset"]),
    job_id=st.none() | st.text(alphabet="abc:._-", min_size=1, max_size=128),
)
def test_fast_size_path_is_a_true_upper_bound(value, via, hops, job_type, job_id):
    spec = JobSpec(value=value, id=job_id, type=job_type, via=via, hops=hops)
    if _v._surely_small(spec):
        assert _v.normalized_size(spec) <= _v.MAX_NORMALIZED_SPEC_BYTES


_ids = st.one_of(
    st.none(), st.just(""), st.text("abc.:-_Z9", min_size=1, max_size=130), st.text(max_size=3), st.integers()
)
_values = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.text(st.characters(max_codepoint=127), min_size=5300, max_size=5500),  # around the fast bound
    st.integers(5300, 5700).map(lambda n: "\x01" * n),  # escapes 6-fold: exact path decides
    st.integers(),
)
_hops = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2, max_value=3))


def _outcome(fn, **kw):
    try:
        return fn(**kw)
    except InvalidJob as exc:
        return exc.message


@given(value=_values, id=_ids, hops=_hops, type=st.sampled_from([None, "", "seed"]))
def test_fast_path_agrees_with_every_check(value, id, hops, type) -> None:
    kw = {"value": value, "id": id, "hops": hops, "type": type}
    assert _outcome(validate_job_spec, **kw) == _outcome(checked_job_spec, **kw)
