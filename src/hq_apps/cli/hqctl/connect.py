"""The connection flags every ``hqctl`` command shares (spec §4.2): URL, token file, timeout."""

from __future__ import annotations

import os
import sys
from typing import Annotated

from cyclopts import Parameter

from hq_adapters.admin_client import AdminClient, ClientError
from hq_apps.cli.cliutil import CliError, parse_go_duration, read_secret_file

DEFAULT_URL = "https://hq.saveweb.org"
DEFAULT_TIMEOUT = "10m"

# The connection flags every command takes, with their help text (spec §4.2).
Url = Annotated[
    str | None,
    Parameter(help=f"Tracker base URL (env HQ_URL; default {DEFAULT_URL}). Must be https "
                   "unless --allow-http is given."),
]  # fmt: skip
AllowHttp = Annotated[
    bool, Parameter(negative="", help="Allow a plain http:// tracker URL (local testing).")
]
TokenFile = Annotated[
    str | None,
    Parameter(help="File holding an admin machine token, mode 0600 (env HQ_MACHINE_TOKEN_FILE)."),
]
Timeout = Annotated[str, Parameter(help="Timeout of each request as a Go duration (10m, 30s, 1h).")]
ProjectId = Annotated[str, Parameter(help="The project's ID.")]
Json = Annotated[
    bool, Parameter(name="--json", negative="", help="Print the server's JSON instead of text.")
]


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
    if not url and not os.environ.get("HQ_URL"):
        # The default is the production tracker: say so before sending a token there.
        print(
            f"{prefix}: using {DEFAULT_URL} (HQ_URL is not set; --url overrides)", file=sys.stderr
        )
    try:
        return AdminClient(base, token, timeout=seconds, allow_http=allow_http)
    except ClientError as exc:
        message = str(exc)
        if message.startswith("tracker URL must use https") and not allow_http:
            message += f" (got {base}; add --allow-http for a local http:// tracker)"
        raise CliError(f"{prefix}: {message}") from None
