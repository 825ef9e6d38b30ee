"""The connection flags every ``hqctl`` command shares (spec §4.2): URL, token file, timeout."""

from __future__ import annotations

import os

from hq_adapters.admin_client import AdminClient, ClientError
from hq_apps.cli.cliutil import CliError, parse_go_duration, read_secret_file

DEFAULT_URL = "https://hq.saveweb.org"
DEFAULT_TIMEOUT = "10m"


def open_client(
    prefix: str,
    *,
    url: str | None,
    allow_http: bool,
    machine_token_file: str | None,
    timeout: str,
) -> AdminClient:
    """An AdminClient from flags and ``HQ_URL`` / ``HQ_MACHINE_TOKEN_FILE``; CliError with
    ``prefix`` (the command name) on any invalid value."""
    base = url or os.environ.get("HQ_URL") or DEFAULT_URL
    token_file = machine_token_file or os.environ.get("HQ_MACHINE_TOKEN_FILE", "")
    if not token_file:
        raise CliError(f"{prefix}: --machine-token-file or HQ_MACHINE_TOKEN_FILE is required")
    try:
        seconds = parse_go_duration(timeout)
    except ValueError as exc:
        raise CliError(f"{prefix}: invalid --timeout: {exc}") from None
    if seconds <= 0:
        raise CliError(f"{prefix}: --timeout must be positive")
    try:
        token = read_secret_file(token_file)
    except CliError as exc:
        raise CliError(f"{prefix}: {exc}") from None
    try:
        return AdminClient(base, token, timeout=seconds, allow_http=allow_http)
    except ClientError as exc:
        raise CliError(f"{prefix}: {exc}") from None
