"""Helpers shared by the CLIs: Go-style flags, secret files, listen addresses, URLs (spec §4)."""

from __future__ import annotations

import base64
import binascii
import math
import os
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import urlsplit

from cyclopts import Parameter

from hq_apps.cli.secret_file import SecretFileError, read_secret

MIN_WEB_SECRET_BYTES = 32

DatabaseUrl = Annotated[
    str, Parameter(env_var="HQ_DATABASE_URL", help="PostgreSQL URL (postgresql://user@host/db).")
]
"""A ``--database-url`` flag that falls back to ``HQ_DATABASE_URL`` (read by cyclopts)."""


class CliError(Exception):
    """A user-facing failure: the message is printed as is."""


def go_style_flags(argv: Sequence[str]) -> list[str]:
    """Accept Go ``flag`` spellings: ``-name value`` and ``-name=value`` become ``--name``.

    Everything after a bare ``--`` is left untouched; ``-h`` stays the help flag.
    """
    out: list[str] = []
    passthrough = False
    for arg in argv:
        if passthrough or arg == "--":
            passthrough = True
            out.append(arg)
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
            out.append("-" + arg)
        else:
            out.append(arg)
    return out


def read_secret_file(path: str) -> str:
    """A secret file's trimmed content (see :mod:`hq_apps.cli.secret_file` for the checks)."""
    try:
        return read_secret(path)
    except SecretFileError as exc:
        raise CliError(str(exc)) from None


def decode_web_secret(text: str) -> bytes:
    """The web-session secret: base64url without padding, at least 32 bytes."""
    try:
        if "=" in text:
            raise ValueError("padding")
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text:
            raise ValueError("not canonical base64url")
    except (ValueError, binascii.Error):
        raise CliError("web session secret must be unpadded base64url") from None
    if len(raw) < MIN_WEB_SECRET_BYTES:
        raise CliError("web session secret must decode to at least 32 bytes")
    return raw


def validate_public_url(url: str) -> str:
    """``http``/``https`` with a host, path empty or ``/``, no query or fragment."""
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or "?" in url
        or "#" in url
    ):
        raise CliError(
            "public URL must be an http(s) URL with a host and no path, query or fragment"
        )
    return url


def parse_listen(listen: str) -> tuple[str, int]:
    """Go-style ``host:port``; an empty host means every IPv4 interface."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise CliError(f"invalid listen address {listen!r}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port_text)


def parse_qps(text: str, flag: str) -> float | None:
    """Empty/blank = unlimited; else a finite number > 0 (``NaN``, ``Inf``, ``0`` rejected)."""
    if not text.strip():
        return None
    try:
        value = float(text.strip())
    except ValueError:
        raise CliError(f"invalid {flag}: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise CliError(f"invalid {flag}: must be a positive finite number")
    return value


def write_exclusive(path: str, data: bytes, mode: int = 0o600) -> None:
    """Create ``path`` (refusing to overwrite) with ``mode`` and write ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
