"""Say "the database" when a ``tracker`` command cannot reach PostgreSQL.

asyncpg reports a stopped server as a bare ``[Errno 111] Connection refused`` and a wrong
password as ``password authentication failed``; neither says it was the database, nor which
one. :func:`database_error` names the host, port, database and user of the URL the command
used (never the password) and what to check.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from urllib.parse import parse_qs, urlsplit

import asyncpg

DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    socket.gaierror,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidPasswordError,
    asyncpg.InvalidCatalogNameError,
    asyncpg.CannotConnectNowError,
    asyncpg.InterfaceError,
)


def describe_dsn(dsn: str) -> str:
    """``user@host:port/database`` of a PostgreSQL URL, without the password."""
    try:
        parts = urlsplit(dsn)
        query = parse_qs(parts.query)
        host = parts.hostname or (query.get("host") or [""])[0] or "localhost"
        port = parts.port or (query.get("port") or ["5432"])[0]
    except ValueError:
        return "(an unparseable database URL)"
    user = parts.username or (query.get("user") or [""])[0]
    database = parts.path.lstrip("/") or user or "(default)"
    return f"{user + '@' if user else ''}{host}:{port}/{database}"


def _flag_value(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag.lstrip("-") == name and arg.startswith("-"):
            if eq:
                return value
            return argv[i + 1] if i + 1 < len(argv) else None
    return None


def database_error(argv: Sequence[str], exc: BaseException) -> str:
    """The message for a connection-level database failure of ``tracker argv``."""
    reason = str(exc).strip() or type(exc).__name__
    if argv and argv[0] == "dev":
        return f"cannot connect to the embedded PostgreSQL under ./data/postgres: {reason}"
    dsn = _flag_value(argv, "database-url") or os.environ.get("HQ_DATABASE_URL", "")
    return (
        f"cannot connect to the database at {describe_dsn(dsn)}: {reason} (check "
        "--database-url / HQ_DATABASE_URL and that PostgreSQL is running and reachable)"
    )
