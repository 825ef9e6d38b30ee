"""HTML responses: the Jinja environment, the page headers of spec §5.1, error pages and
redirects. Every dashboard response goes through here so the headers cannot be forgotten."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar import Response
from litestar.datastructures import Cookie

HTML = "text/html"  # Litestar appends "; charset=utf-8"
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
_HERE = Path(__file__).parent


EMPTY = "—"


def format_ts(value: int | None) -> str:
    """ISO-8601 UTC (``2026-12-01T05:12:36Z``, as ``hqctl`` prints it); ``—`` when absent.

    The reference shows ``<unix> (YYYY-MM-DD HH:MM:SS UTC)`` and ``<nil>`` (spec §5.1); the
    page is for people, the API keeps the numbers (docs/web.md, "Display")."""
    if value is None:
        return EMPTY
    try:
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(value)


def pretty_json(value: Any) -> str:
    """Indented JSON for the job page. A stored value too deep to parse arrives as
    ``msgspec.Raw`` (see ``hq_adapters.postgres.rows.load``) and is shown as stored."""
    if isinstance(value, msgspec.Raw):
        return bytes(value).decode("utf-8", "replace")
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except RecursionError:
        return "(nested too deeply to display)"


def _bar(counts: dict[str, int]) -> list[tuple[str, int, float]]:
    """(status, count, percent) for the proportional status bar; zero counts omitted."""
    total = sum(counts.values())
    if not total:
        return []
    return [(k, n, round(100 * n / total, 2)) for k, n in counts.items() if n]


@functools.cache
def make_environment() -> Environment:
    """One shared environment: templates are static, so compiled templates can be reused."""
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ts"] = format_ts
    env.filters["pretty"] = pretty_json
    env.filters["bar"] = _bar
    return env


def page(
    env: Environment,
    template: str,
    *,
    status: int = 200,
    cookies: list[Cookie] | None = None,
    **context: Any,
) -> Response[bytes]:
    context.setdefault("user", None)
    context.setdefault("csrf", "")
    context.setdefault("error", None)
    body = env.get_template(template).render(**context)
    return Response(
        body.encode("utf-8"),
        status_code=status,
        media_type=HTML,
        headers=PAGE_HEADERS,
        cookies=cookies or [],
    )


def error_page(
    env: Environment, status: int, message: str, *, cookies: list[Cookie] | None = None, **ctx: Any
) -> Response[bytes]:
    return page(env, "error.html", status=status, message=message, cookies=cookies, **ctx)


def redirect(location: str, *, cookies: list[Cookie] | None = None) -> Response[bytes]:
    return Response(
        b"",
        status_code=303,
        media_type=HTML,
        headers={**PAGE_HEADERS, "Location": location},
        cookies=cookies or [],
    )


def css() -> bytes:
    return (_HERE / "static" / "admin.css").read_bytes()
