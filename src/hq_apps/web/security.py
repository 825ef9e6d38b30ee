"""Browser credentials: session tokens, their stored digests, CSRF tokens and the signed OAuth
transaction cookie (spec §5.2, §5.3).

D3: the stored session digest is an HMAC keyed by the web secret (not the reference's plain
salted SHA-256), so rotating the secret makes every stored session unreachable.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from hq_domain.ids import WEB_SESSION_DIGEST_PREFIX, b64url

SESSION_COOKIE = "saveweb_hq_session"
OAUTH_COOKIE = "saveweb_hq_oauth"
SESSION_SECONDS = 12 * 3600
OAUTH_SECONDS = 600
SESSION_TOKEN_CHARS = 43
OAUTH_COOKIE_PATH = "/auth/github/callback"

_CSRF_PREFIX = b"csrf\x00"
_OAUTH_PREFIX = b"oauth\x00"


def random_token() -> str:
    """base64url(32 random bytes): 43 characters (session token, OAuth state, PKCE verifier)."""
    return b64url(secrets.token_bytes(32))


def session_digest(secret: bytes, token: str) -> bytes:
    """What the store keeps for a session token; bound to the web secret (D3)."""
    return hmac.new(secret, WEB_SESSION_DIGEST_PREFIX + token.encode("ascii"), "sha256").digest()


def csrf_token(secret: bytes, session_token: str) -> str:
    return b64url(hmac.new(secret, _CSRF_PREFIX + session_token.encode("ascii"), "sha256").digest())


def csrf_ok(secret: bytes, session_token: str, submitted: str | None) -> bool:
    if not submitted:
        return False
    expected = csrf_token(secret, session_token).encode("ascii")
    return hmac.compare_digest(expected, submitted.encode("utf-8", "replace"))


def pkce_challenge(verifier: str) -> str:
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


@dataclass(frozen=True, slots=True)
class OAuthTransaction:
    state: str
    verifier: str
    expires_at: int


def seal_transaction(secret: bytes, tx: OAuthTransaction) -> str:
    """``b64url(state.verifier.expires_at) + "." + b64url(HMAC(secret, "oauth\\0" + payload))``."""
    payload = f"{tx.state}.{tx.verifier}.{tx.expires_at}".encode("ascii")
    sig = hmac.new(secret, _OAUTH_PREFIX + payload, "sha256").digest()
    return b64url(payload) + "." + b64url(sig)


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def open_transaction(secret: bytes, cookie: str) -> OAuthTransaction | None:
    """The transaction in a cookie whose signature verifies, else None (expiry not checked)."""
    parts = cookie.split(".")
    if len(parts) != 2:
        return None
    try:
        payload, sig = _unb64url(parts[0]), _unb64url(parts[1])
    except (binascii.Error, ValueError):
        return None
    expected = hmac.new(secret, _OAUTH_PREFIX + payload, "sha256").digest()
    if not hmac.compare_digest(expected, sig):
        return None
    fields = payload.decode("ascii", "replace").split(".")
    if len(fields) != 3 or not fields[0] or not fields[1]:
        return None
    try:
        expires_at = int(fields[2])
    except ValueError:
        return None
    return OAuthTransaction(fields[0], fields[1], expires_at)
