"""Session digests, CSRF tokens and the OAuth transaction cookie (spec §5.2, §5.3, D3)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from hq_apps.web import security

SECRET = b"k" * 32


def test_random_tokens_are_43_url_safe_chars() -> None:
    tokens = {security.random_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) == 43 and "=" not in t and "+" not in t and "/" not in t for t in tokens)


def test_session_digest_is_bound_to_the_secret() -> None:
    token = security.random_token()
    digest = security.session_digest(SECRET, token)
    expected = hmac.new(SECRET, b"saveweb-web-session-v1\x00" + token.encode(), "sha256").digest()
    assert digest == expected
    assert digest != security.session_digest(b"j" * 32, token)
    assert digest != hashlib.sha256(b"saveweb-web-session-v1\x00" + token.encode()).digest()


def test_csrf_token_matches_the_spec_formula() -> None:
    token = "t" * 43
    mac = hmac.new(SECRET, b"csrf\x00" + token.encode(), "sha256").digest()
    assert security.csrf_token(SECRET, token) == base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    assert security.csrf_ok(SECRET, token, security.csrf_token(SECRET, token))
    assert not security.csrf_ok(SECRET, token, None)
    assert not security.csrf_ok(SECRET, token, "")
    assert not security.csrf_ok(SECRET, "u" * 43, security.csrf_token(SECRET, token))
    assert not security.csrf_ok(b"x" * 32, token, security.csrf_token(SECRET, token))
    assert not security.csrf_ok(SECRET, token, "é" * 43)


def test_transaction_cookie_round_trip_and_layout() -> None:
    tx = security.OAuthTransaction("s" * 43, "v" * 43, 1_700_000_600)
    cookie = security.seal_transaction(SECRET, tx)
    payload_b64, sig_b64 = cookie.split(".")
    payload = base64.urlsafe_b64decode(payload_b64 + "==")
    assert payload == f"{'s' * 43}.{'v' * 43}.1700000600".encode()
    mac = hmac.new(SECRET, b"oauth\x00" + payload, "sha256").digest()
    assert base64.urlsafe_b64decode(sig_b64 + "=") == mac
    assert security.open_transaction(SECRET, cookie) == tx


def test_tampered_or_foreign_cookies_do_not_open() -> None:
    tx = security.OAuthTransaction("s" * 43, "v" * 43, 1_700_000_600)
    cookie = security.seal_transaction(SECRET, tx)
    assert security.open_transaction(b"o" * 32, cookie) is None
    payload, sig = cookie.split(".")
    other = security.seal_transaction(SECRET, security.OAuthTransaction("x" * 43, "v" * 43, 1))
    assert security.open_transaction(SECRET, other.split(".")[0] + "." + sig) is None
    for junk in ("", ".", "abc", "a.b.c", payload, "!!!." + sig):
        assert security.open_transaction(SECRET, junk) is None


def test_pkce_challenge_is_s256() -> None:
    # RFC 7636 appendix B vector.
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert security.pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
