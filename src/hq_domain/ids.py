"""Identifiers, attempt IDs, machine tokens and their digests (spec §1.2.1, §2.2, §2.11)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

_ID_RE = re.compile(r"[A-Za-z0-9._:-]+")

MACHINE_TOKEN_DIGEST_PREFIX = b"saveweb-machine-token-v1\x00"
WEB_SESSION_DIGEST_PREFIX = b"saveweb-web-session-v1\x00"
MAX_MACHINE_TOKEN_CHARS = 1024


def is_id(value: object, max_bytes: int = 128) -> bool:
    """True for a 1..max_bytes ASCII string matching ``[A-Za-z0-9._:-]+``."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= max_bytes
        and _ID_RE.fullmatch(value) is not None
    )


def b64url(raw: bytes) -> str:
    """base64url without padding, as every random identifier in the protocol uses."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def new_attempt_id() -> str:
    """``at_`` + base64url(18 random bytes): 27 characters."""
    return "at_" + b64url(secrets.token_bytes(18))


def new_machine_token() -> str:
    """``hq_`` + base64url(32 random bytes): 46 characters."""
    return "hq_" + b64url(secrets.token_bytes(32))


def machine_token_digest(token: str) -> bytes:
    """Lookup digest of a machine token; identical to the reference so old rows keep working."""
    return hashlib.sha256(MACHINE_TOKEN_DIGEST_PREFIX + token.encode("utf-8")).digest()


def default_job_id(job_type: str | None, value: str) -> str:
    """Stable ``j1_`` job ID (spec §3.3): SHA-256 of type (``seed`` when empty), NUL, value."""
    t = job_type or "seed"
    digest = hashlib.sha256(t.encode("utf-8") + b"\x00" + value.encode("utf-8")).hexdigest()
    return "j1_" + digest


def unique_value_digest(value: str) -> bytes:
    """SHA-256 of the UTF-8 value: the dedup key of ``unique_value`` projects (spec §2.6)."""
    return hashlib.sha256(value.encode("utf-8")).digest()
