"""Worker-request validation: outcome, execution error, receipts, claim, batches (spec §1.2.4–6, §1.7.11–14)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from hq_domain.errors import InvalidRequest
from hq_domain.jobs import ArtifactReceipt, ExecutionError, Outcome
from hq_domain.validation import (
    check_attempt_ref,
    check_batch_shape,
    check_lease_seconds,
    check_receipt_count,
    complete_item,
    fail_item,
    validate_claim,
    validate_execution_error,
    validate_outcome,
    validate_receipt,
)
from hq_domain.worker import AttemptRef, ClaimRequest, CompleteItem, FailItem


def rejects(message: str, fn, *args: object) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidRequest) as exc:
        fn(*args)
    assert exc.value.message == message
    assert (exc.value.code, exc.value.status) == ("invalid_request", 400)


# --- Outcome (§1.2.4) -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["success", "http_error", "skipped"])
def test_outcome_kinds(kind: str) -> None:
    assert validate_outcome(kind, None, None, None) == Outcome(kind)


def test_outcome_stored_as_sent() -> None:
    out = validate_outcome("http_error", 404, "https://x/", {"a": 1})
    assert out.to_json() == {
        "kind": "http_error",
        "code": 404,
        "uri": "https://x/",
        "meta": {"a": 1},
    }
    assert validate_outcome("success", None, None, None).to_json() == {
        "kind": "success",
        "code": None,
        "uri": None,
        "meta": None,
    }


@pytest.mark.parametrize("kind", ["", "SUCCESS", "done", None])
def test_outcome_bad_kind(kind: object) -> None:
    rejects(
        "outcome kind must be success, http_error, or skipped",
        validate_outcome,
        kind,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("code", [-1, 1000, True, 200.0])
def test_outcome_bad_code(code: object) -> None:
    rejects("outcome code must be between 0 and 999", validate_outcome, "success", code, None, None)


@pytest.mark.parametrize("code", [0, 999])
def test_outcome_code_bounds(code: int) -> None:
    assert validate_outcome("success", code, None, None).code == code


def test_outcome_uri_limit() -> None:
    assert validate_outcome("success", None, "u" * 4096, None).uri == "u" * 4096
    assert validate_outcome("success", None, "", None).uri == ""
    rejects("outcome URI exceeds 4096 bytes", validate_outcome, "success", None, "u" * 4097, None)
    rejects("outcome URI exceeds 4096 bytes", validate_outcome, "success", None, "é" * 2049, None)


def test_outcome_meta_rules() -> None:
    assert validate_outcome("success", None, None, {}).meta == {}
    validate_outcome("success", None, None, {"k": "x" * 8184})
    rejects(
        "invalid outcome meta: object exceeds 8192 bytes",
        validate_outcome,
        "success",
        None,
        None,
        {"k": "x" * 8185},
    )
    rejects(
        "invalid outcome meta: object exceeds 8192 bytes",
        validate_outcome,
        "success",
        None,
        None,
        {"k": ">" * 1400},
    )
    rejects(
        "invalid outcome meta: must be a JSON object", validate_outcome, "success", None, None, []
    )


# --- ExecutionError (§1.2.5) ------------------------------------------------------------------


def test_execution_error_valid() -> None:
    err = validate_execution_error("http.5xx:x-y", "boom", {"a": [1]})
    assert err == ExecutionError("http.5xx:x-y", "boom", {"a": [1]})
    assert validate_execution_error("c" * 64, "", None).to_json() == {
        "code": "c" * 64,
        "message": "",
        "details": None,
    }
    assert validate_execution_error("c", None, None).message == ""
    assert validate_execution_error("c", "é" * 1024, None).message == "é" * 1024


@pytest.mark.parametrize("code", ["", "c" * 65, "a b", "é", None])
def test_execution_error_bad_code(code: object) -> None:
    rejects("execution error code is invalid", validate_execution_error, code, "", None)


@pytest.mark.parametrize("message", ["m" * 2049, "é" * 1025, "\ud800", 5])
def test_execution_error_bad_message(message: object) -> None:
    rejects("execution error message is invalid", validate_execution_error, "c", message, None)


def test_execution_error_details() -> None:
    validate_execution_error("c", "", {"k": "x" * 8184})
    rejects(
        "invalid execution error details: object exceeds 8192 bytes",
        validate_execution_error,
        "c",
        "",
        {"k": "x" * 8185},
    )
    rejects(
        "invalid execution error details: must be a JSON object",
        validate_execution_error,
        "c",
        "",
        "s",
    )


# --- ArtifactReceipt (§1.2.6) -----------------------------------------------------------------

RECEIPT = {"id": "r1", "issuer": "store", "object_id": "obj", "size_bytes": 1, "accepted_at": 1}


def receipt(**over: object) -> ArtifactReceipt:
    fields = {**RECEIPT, "checksum": "md5:" + "0" * 32, **over}
    return validate_receipt(
        fields["id"],
        fields["issuer"],
        fields["object_id"],
        fields["checksum"],
        fields["size_bytes"],
        fields["accepted_at"],
    )


@pytest.mark.parametrize(
    "checksum",
    [
        "blake3:" + "ab" * 32,
        "sha1:" + "0f" * 20,
        "md5:" + "9" * 32,
        "xx128hash:" + "e" * 32,
        "a:00",
        "a" * 32 + ":" + "f" * 128,
        "0_-:00",
    ],
)
def test_valid_checksums(checksum: str) -> None:
    assert receipt(checksum=checksum).checksum == checksum


@pytest.mark.parametrize(
    "checksum",
    [
        "",
        "blake3",
        "BLAKE3:0123",
        "blake3:ABCDEF",
        "blake3:0",
        "blake3:xyz0",
        "a" * 33 + ":00",
        "a:" + "f" * 130,
        "_a:00",
        "-a:00",
        "blake3:00\n",
        "blake3:",
        ":00",
        None,
    ],
)
def test_invalid_checksums(checksum: object) -> None:
    with pytest.raises(InvalidRequest, match=r"^invalid artifact receipt$"):
        receipt(checksum=checksum)


def test_receipt_max_checksum_is_161_chars() -> None:
    longest = "a" * 32 + ":" + "f" * 128
    assert len(longest) == 161
    receipt(checksum=longest)


@pytest.mark.parametrize(
    "over",
    [
        {"id": ""},
        {"id": "a b"},
        {"id": "x" * 129},
        {"issuer": ""},
        {"issuer": "i" * 513},
        {"issuer": None},
        {"object_id": ""},
        {"object_id": "o" * 1025},
        {"size_bytes": 0},
        {"size_bytes": 2**63},
        {"size_bytes": True},
        {"size_bytes": 1.0},
        {"accepted_at": 0},
        {"accepted_at": -1},
        {"accepted_at": 2**63},
    ],
)
def test_invalid_receipt_fields(over: dict[str, object]) -> None:
    with pytest.raises(InvalidRequest, match=r"^invalid artifact receipt$"):
        receipt(**over)


def test_receipt_bounds() -> None:
    r = receipt(issuer="i" * 512, object_id="o" * 1024, size_bytes=2**63 - 1, accepted_at=2**63 - 1)
    assert r.to_json()["size_bytes"] == 2**63 - 1
    assert set(r.to_json()) == {
        "id",
        "issuer",
        "object_id",
        "checksum",
        "size_bytes",
        "accepted_at",
    }


def test_receipt_count() -> None:
    check_receipt_count(None)
    check_receipt_count([])
    check_receipt_count([object()] * 16)
    rejects(
        "at most 16 artifact receipts are allowed per job", check_receipt_count, [object()] * 17
    )


# --- Claim request (§1.7.11) ------------------------------------------------------------------

CLAIM = {
    "worker_id": "w1",
    "max_jobs": 1,
    "lease_seconds": 30,
    "accept_types": None,
    "policy_version": 1,
}


def claim(**over: object) -> ClaimRequest:
    f = {**CLAIM, **over}
    return validate_claim(
        f["worker_id"], f["max_jobs"], f["lease_seconds"], f["accept_types"], f["policy_version"]
    )  # type: ignore[arg-type]


def test_claim_valid() -> None:
    assert claim() == ClaimRequest("w1", 1, 30, (), 1)
    assert claim(
        max_jobs=256, lease_seconds=3600, accept_types=["asset", "seed"], policy_version=9
    ) == (ClaimRequest("w1", 256, 3600, ("asset", "seed"), 9))
    assert claim(accept_types=[]).accept_types == ()
    assert claim(accept_types=["seed"] * 16).accept_types == ("seed",) * 16


@pytest.mark.parametrize(
    "over",
    [
        {"worker_id": ""},
        {"worker_id": "a b"},
        {"worker_id": None},
        {"max_jobs": 0},
        {"max_jobs": 257},
        {"max_jobs": True},
        {"max_jobs": 1.0},
        {"lease_seconds": 0},
        {"lease_seconds": 3601},
        {"accept_types": ["seed"] * 17},
        {"accept_types": ["bogus"] * 17},
        {"policy_version": 0},
        {"policy_version": -1},
    ],
)
def test_claim_invalid(over: dict[str, object]) -> None:
    with pytest.raises(InvalidRequest, match=r"^invalid claim request$"):
        claim(**over)


@pytest.mark.parametrize("types", [["seed", "other"], [""], ["SEED"]])
def test_claim_bad_accept_type(types: list[str]) -> None:
    with pytest.raises(InvalidRequest, match=r"^accept_types may contain only seed or asset$"):
        claim(accept_types=types)


# --- Batches and items (§1.7.12–14) -----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 256])
def test_batch_shape_ok(n: int) -> None:
    check_batch_shape("w", n, "invalid completion batch")


@pytest.mark.parametrize(("worker", "n"), [("w", 0), ("w", 257), ("", 1), ("a b", 1), (None, 1)])
@pytest.mark.parametrize(
    "message",
    ["invalid completion batch", "invalid failure batch", "invalid lease extension batch"],
)
def test_batch_shape_bad(worker: object, n: int, message: str) -> None:
    rejects(message, check_batch_shape, worker, n, message)


def test_attempt_ref() -> None:
    assert check_attempt_ref(1, "at_x") == AttemptRef(1, "at_x")
    assert check_attempt_ref(2**63 - 1, "a").job_id == 2**63 - 1


@pytest.mark.parametrize(
    ("job_id", "attempt_id"),
    [
        (0, "a"),
        (-1, "a"),
        (2**63, "a"),
        (True, "a"),
        (1.0, "a"),
        ("1", "a"),
        (1, ""),
        (1, "a b"),
        (1, None),
    ],
)
def test_attempt_ref_bad(job_id: object, attempt_id: object) -> None:
    rejects("invalid job or attempt ID", check_attempt_ref, job_id, attempt_id)


@dataclass
class _Fields:
    """Any object with the wire fields' attribute names will do (the API passes its structs)."""

    kind: object = None
    code: object = None
    uri: object = None
    meta: object = None
    message: object = None
    details: object = None


def _receipt(**over: object) -> SimpleNamespace:
    return SimpleNamespace(**{**RECEIPT, "checksum": "md5:" + "0" * 32, **over})


def test_complete_item_validates_every_part() -> None:
    out = _Fields(kind="http_error", code=404, uri="u", meta={"a": 1})
    r = _receipt()
    assert complete_item(3, "at", out, None) == CompleteItem(
        3, "at", Outcome("http_error", 404, "u", {"a": 1}), None
    )
    assert complete_item(3, "at", _Fields(kind="success"), []).artifact_receipts == ()
    assert complete_item(3, "at", _Fields(kind="success"), [r]).artifact_receipts == (receipt(),)


def test_complete_item_check_order() -> None:
    """Attempt reference, then outcome, then receipt count, then each receipt."""
    ok, bad = _Fields(kind="success"), _Fields(kind="done")
    too_many = [_receipt()] * 17
    rejects("invalid job or attempt ID", complete_item, 0, "at", bad, too_many)
    kind_message = "outcome kind must be success, http_error, or skipped"
    rejects(kind_message, complete_item, 1, "at", None, None)
    rejects(kind_message, complete_item, 1, "at", bad, too_many)
    rejects("at most 16 artifact receipts are allowed per job", complete_item, 1, "at", ok,
            [_receipt(id="")] * 17)  # fmt: skip
    with pytest.raises(InvalidRequest, match=r"^invalid artifact receipt$"):
        complete_item(1, "at", ok, [_receipt(), _receipt(size_bytes=0)])


def test_fail_item_validates_every_part() -> None:
    err = _Fields(code="c", message="m", details={"d": 1})
    assert fail_item(3, "at", True, err) == FailItem(3, "at", True, ExecutionError("c", "m", {"d": 1}))
    assert fail_item(3, "at", None, err).retryable is False
    assert fail_item(3, "at", 0, err).retryable is False
    rejects("invalid job or attempt ID", fail_item, 1, "", False, _Fields())
    rejects("execution error code is invalid", fail_item, 1, "at", False, None)
    rejects("execution error code is invalid", fail_item, 1, "at", False, _Fields(code=""))


def test_lease_seconds() -> None:
    assert check_lease_seconds(1, "m") == 1
    assert check_lease_seconds(3600, "m") == 3600
    for bad in (0, 3601, True, 2.0):
        rejects(
            "invalid lease extension batch",
            check_lease_seconds,
            bad,
            "invalid lease extension batch",
        )
