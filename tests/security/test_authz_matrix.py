"""Every route of spec §1.7 × every caller kind → exactly the spec's status, code and message.

A denied request must also leave the store untouched (a 403 that deleted first would pass a
status-only check)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from hq_apps.web import security
from tests.fuzz.support import snapshot
from tests.security.matrix import (
    CALLERS,
    ROUTES,
    SESSION_TOKEN,
    Route,
    build_app,
    expected,
    headers_for,
)

KEYS = {"code", "message", "retryable", "retry_after_ms", "details"}


@pytest.fixture(scope="module")
def apps() -> Iterator[dict[str, tuple[TestClient[Any], Any]]]:
    clients: dict[str, tuple[TestClient[Any], Any]] = {}
    try:
        for caller in CALLERS:
            app, store = build_app()
            client = TestClient(app, raise_server_exceptions=False)
            client.__enter__()
            client.follow_redirects = False
            clients[caller] = (client, store)
        yield clients
    finally:
        for client, _ in clients.values():
            client.__exit__(None, None, None)


def _request(client: TestClient[Any], route: Route, headers: dict[str, str]) -> Any:
    h = dict(headers)
    body = route.body
    if body is None:
        return client.request(route.method, route.path, headers=h)
    if isinstance(body, bytes):
        h["Content-Type"] = route.content_type
        return client.request(route.method, route.path, headers=h, content=body)
    return client.request(route.method, route.path, headers=h, json=body)


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.number}-{r.method}")
def test_cell(apps: dict[str, Any], route: Route, caller: str) -> None:
    client, store = apps[caller]
    status, code, message = expected(route, caller)
    for headers in headers_for(caller):
        before = snapshot(store)
        r = _request(client, route, headers)
        assert r.status_code == status, (headers, r.status_code, r.text)
        if code is not None:
            err = r.json()["error"]
            assert set(err) == KEYS
            assert (err["code"], err["message"]) == (code, message), err
            assert "no-store" in r.headers["cache-control"]
            assert snapshot(store) == before  # nothing happened
        elif route.kind == "whoami":
            assert r.json() == {"user_id": caller}


def test_the_session_cookie_is_genuinely_valid(apps: dict[str, Any]) -> None:
    """The cookie column means something only if that cookie opens the dashboard."""
    client, _ = apps["session_cookie"]
    r = client.get("/admin", headers={"Cookie": f"{security.SESSION_COOKIE}={SESSION_TOKEN}"})
    assert r.status_code == 200 and "Projects" in r.text


def test_every_mounted_api_route_is_in_the_matrix() -> None:
    """A route added later without a matrix row fails here."""
    app, _ = build_app()
    mounted = {
        (method, route.path_format)
        for route in app.routes
        for method in getattr(route, "methods", ())
        if route.path.startswith(("/api/", "/healthz")) and method not in ("OPTIONS", "HEAD")
    }
    covered = {(r.method, _template(r.path)) for r in ROUTES}
    assert mounted == covered, (mounted - covered, covered - mounted)


def _template(path: str) -> str:
    parts = path.split("/")
    names = {3: "", 5: "{project_id}", 7: "{job_id}"}
    out = []
    for i, part in enumerate(parts):
        if parts[:5] == ["", "api", "v1", "admin", "users"] and i == 5:
            out.append("{user_id}")
        elif parts[:4] == ["", "api", "v1", "projects"] and i == 4:
            out.append("{project_id}")
        elif parts[:5] == ["", "api", "v1", "admin", "projects"] and i in names and names[i]:
            out.append(names[i])
        else:
            out.append(part)
    return "/".join(out)
