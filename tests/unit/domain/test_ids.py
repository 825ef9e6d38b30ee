"""Identifiers, attempt IDs, machine tokens, digests and stable job IDs (spec §1.2.1, §2.2, §2.11, §3.3)."""

from __future__ import annotations

import hashlib
import re

import pytest

from hq_domain import ids

B64URL = re.compile(r"[A-Za-z0-9_-]+")


@pytest.mark.parametrize("value", ["a", "A-z_0.9:x", "x" * 128, "proj:1.2-3_4"])
def test_is_id_accepts(value: str) -> None:
    assert ids.is_id(value)


@pytest.mark.parametrize(
    "value", ["", "x" * 129, "a b", "a/b", "é", "a\n", "ü" * 10, None, 5, b"abc", ["a"]]
)
def test_is_id_rejects(value: object) -> None:
    assert not ids.is_id(value)


def test_is_id_custom_limit_for_error_codes() -> None:
    assert ids.is_id("c" * 64, max_bytes=64)
    assert not ids.is_id("c" * 65, max_bytes=64)


def test_attempt_id_shape_and_uniqueness() -> None:
    seen = {ids.new_attempt_id() for _ in range(200)}
    assert len(seen) == 200
    for a in seen:
        assert len(a) == 27 and a.startswith("at_")
        assert B64URL.fullmatch(a[3:]) and "=" not in a
        assert ids.is_id(a)


def test_machine_token_shape_and_uniqueness() -> None:
    seen = {ids.new_machine_token() for _ in range(200)}
    assert len(seen) == 200
    for t in seen:
        assert len(t) == 46 and t.startswith("hq_")
        assert B64URL.fullmatch(t[3:])


def test_b64url_has_no_padding_and_is_url_safe() -> None:
    assert ids.b64url(b"\xfb\xff") == "-_8"
    assert ids.b64url(b"") == ""


def test_machine_token_digest_uses_reference_prefix() -> None:
    token = "hq_abc"
    expected = hashlib.sha256(b"saveweb-machine-token-v1\x00hq_abc").digest()
    assert ids.machine_token_digest(token) == expected
    assert len(expected) == 32
    assert ids.machine_token_digest("hq_abd") != expected


def test_web_session_prefix() -> None:
    assert ids.WEB_SESSION_DIGEST_PREFIX == b"saveweb-web-session-v1\x00"


@pytest.mark.parametrize(
    ("job_type", "value", "expected"),
    [
        (
            "seed",
            "https://example.org/",
            "j1_92f50438a02ab171b6735678275a2f9db233d4c88e301a0243886c2679ce7070",
        ),
        (
            "asset",
            "https://example.org/a.png",
            "j1_3415498e0d810218fb682c5192529b4ec15d74dfbaedf293c3b13d5d5c652998",
        ),
        (
            "seed",
            "https://例子.测试/路径",
            "j1_6f244c2352df6cd3f399df55501a1b77c57f98b85a94a2193849f5532e766528",
        ),
    ],
)
def test_default_job_id_vectors(job_type: str, value: str, expected: str) -> None:
    assert ids.default_job_id(job_type, value) == expected


@pytest.mark.parametrize("empty", ["", None])
def test_default_job_id_empty_type_is_seed(empty: str | None) -> None:
    v = "https://example.org/"
    assert ids.default_job_id(empty, v) == ids.default_job_id("seed", v)
    assert ids.default_job_id(empty, v) != ids.default_job_id("asset", v)


def test_default_job_id_is_a_valid_external_id() -> None:
    assert ids.is_id(ids.default_job_id("seed", "x"))


def test_unique_value_digest() -> None:
    assert ids.unique_value_digest("é") == hashlib.sha256("é".encode()).digest()
    assert len(ids.unique_value_digest("a")) == 32
