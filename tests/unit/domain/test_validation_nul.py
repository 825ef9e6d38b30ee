"""U+0000 anywhere a client's text reaches PostgreSQL is refused with a 400 (text and jsonb
cannot hold it: the insert failed with a 500 before)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hq_domain.errors import InvalidJob, InvalidRequest
from hq_domain.projects import validate_client_versions
from hq_domain.storable import holds_nul
from hq_domain.validation import (
    validate_execution_error,
    validate_job_spec,
    validate_outcome,
    validate_receipt,
)

NUL = "\x00"


def job_message(**kwargs: object) -> str:
    with pytest.raises(InvalidJob) as exc:
        validate_job_spec(**kwargs)  # type: ignore[arg-type]
    assert exc.value.status == 400
    return exc.value.message


@pytest.mark.parametrize("value", [NUL, "a\x00b", "https://e/\x00", "é\x00"])
def test_value_with_nul_is_refused_on_both_paths(value: str) -> None:
    assert job_message(value=value) == "value must not contain U+0000"


def test_value_checks_keep_their_order() -> None:
    # id is checked first; then an over-long value reports its size, not the NUL
    assert job_message(value=NUL, id="bad id").startswith("id must be")
    assert job_message(value=NUL + "x" * 9000) == "value must be valid UTF-8 and at most 8192 bytes"


def test_via_with_nul() -> None:
    assert job_message(value="v", via="a\x00") == "via must not contain U+0000"


@pytest.mark.parametrize(
    "attr", [{"k": NUL}, {NUL: 1}, {"k": [1, {"x": "a\x00"}]}, {"deep": {"deeper": [NUL]}}]
)
def test_attr_with_nul_in_a_key_or_string(attr: dict[str, object]) -> None:
    assert job_message(value="v", attr=attr) == "invalid attr: must not contain U+0000"


def test_escaped_backslash_u0000_text_is_not_nul() -> None:
    assert validate_job_spec(value="a\\u0000b", attr={"k": "\\u0000"}).value == "a\\u0000b"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids)))  # fmt: skip
def test_holds_nul_finds_every_nul(doc: object) -> None:
    import json

    assert holds_nul(doc) == ("\\u0000" in json.dumps(doc))


def test_outcome_meta_and_uri() -> None:
    with pytest.raises(InvalidRequest, match="invalid outcome meta: must not contain U"):
        validate_outcome("success", 200, None, {"k": NUL})
    with pytest.raises(InvalidRequest, match="outcome URI must not contain U"):
        validate_outcome("success", 200, "https://e/\x00", None)


def test_execution_error_message_and_details() -> None:
    with pytest.raises(InvalidRequest, match="execution error message is invalid"):
        validate_execution_error("E", "a\x00", None)
    with pytest.raises(InvalidRequest, match="invalid execution error details: must not contain"):
        validate_execution_error("E", "m", {"k": [NUL]})


@pytest.mark.parametrize("field", ["issuer", "object_id"])
def test_receipt_text(field: str) -> None:
    fields: dict[str, object] = {
        "id": "r1", "issuer": "s3", "object_id": "o", "checksum": "sha256:00",
        "size_bytes": 1, "accepted_at": 1,
    }  # fmt: skip
    fields[field] = "x\x00"
    with pytest.raises(InvalidRequest, match="invalid artifact receipt"):
        validate_receipt(**fields)


def test_client_versions() -> None:
    with pytest.raises(InvalidRequest, match="client_versions entries must not contain U"):
        validate_client_versions(["v1\x00"])
    assert validate_client_versions(["v1"]) == ("v1",)
