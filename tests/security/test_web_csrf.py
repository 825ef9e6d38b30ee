"""CSRF on every dashboard POST (spec §5.2), with the POST routes enumerated from the app
itself so a new form route without the check fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from hq_apps.web import security
from hq_domain.users import Role, UserStatus
from tests.fuzz.support import snapshot
from tests.security.matrix import WEB_SECRET, build_app

BOTH_TOKEN = "b" * 43  # a session of an active admin+worker user: every role gate passes
OTHER_TOKEN = "o" * 43
PARAMS = {"project_id": "p", "job_id": "1", "user_id": "victim"}


def _web_posts(app: Any) -> list[str]:
    paths = []
    for route in app.routes:
        if "POST" in getattr(route, "methods", ()) and not route.path.startswith("/api/"):
            path = route.path_format
            for name, value in PARAMS.items():
                path = path.replace("{" + name + "}", value)
            assert "{" not in path, f"no test value for a parameter of {route.path}"
            paths.append(path)
    return sorted(paths)


@pytest.fixture(scope="module")
def web() -> Iterator[tuple[TestClient[Any], Any, list[str]]]:
    import asyncio

    app, store = build_app()

    async def sessions() -> None:
        await store.put_user("both", UserStatus.ACTIVE, [Role.ADMIN, Role.WORKER])
        for token, user in ((BOTH_TOKEN, "both"), (OTHER_TOKEN, "admin")):
            digest = security.session_digest(WEB_SECRET, token)
            await store.create_session(digest, user, 2_000_000_000)

    asyncio.run(sessions())
    with TestClient(app, raise_server_exceptions=False) as client:
        client.follow_redirects = False
        yield client, store, _web_posts(app)


def test_the_dashboard_has_post_routes(web: Any) -> None:
    _, _, posts = web
    expected = {"/logout", "/worker/token", "/worker/token/revoke", "/admin/projects",
                "/admin/users", "/admin/projects/p/source", "/admin/users/victim/token"}  # fmt: skip
    assert expected <= set(posts), posts


def _cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"{security.SESSION_COOKIE}={token}"}


def _attempts(path: str) -> list[tuple[str, dict[str, Any], dict[str, str], int]]:
    """(label, form data, extra headers, expected status) of forged submissions."""
    right = security.csrf_token(WEB_SECRET, BOTH_TOKEN)
    return [
        ("no csrf field", {"x": "1"}, _cookie(BOTH_TOKEN), 403),
        ("empty csrf", {"csrf": ""}, _cookie(BOTH_TOKEN), 403),
        ("csrf of another session", {"csrf": security.csrf_token(WEB_SECRET, OTHER_TOKEN)},
         _cookie(BOTH_TOKEN), 403),
        ("csrf under another secret", {"csrf": security.csrf_token(b"z" * 32, BOTH_TOKEN)},
         _cookie(BOTH_TOKEN), 403),
        ("csrf truncated", {"csrf": right[:-1]}, _cookie(BOTH_TOKEN), 403),
        ("csrf in a header only", {"x": "1"}, {**_cookie(BOTH_TOKEN), "X-CSRF-Token": right}, 403),
        ("no session at all", {"csrf": right}, {}, 303),
    ]  # fmt: skip


def test_every_web_post_refuses_forged_or_missing_csrf(web: Any) -> None:
    client, store, posts = web
    checked = 0
    for path in posts:
        for label, data, headers, status in _attempts(path):
            before = snapshot(store)
            r = client.post(path, data=data, headers=headers)
            assert r.status_code == status, (path, label, r.status_code, r.text[:300])
            if status == 403:
                assert "Invalid CSRF token" in r.text, (path, label)
            else:
                assert r.headers["location"] == "/", (path, label)
            assert snapshot(store) == before, (path, label)
            checked += 1
    assert checked == len(posts) * 7


def test_a_matching_csrf_token_is_accepted(web: Any) -> None:
    """The forged cases above fail for the right reason: the genuine token works."""
    client, store, _ = web
    page = client.get("/admin/users", headers=_cookie(BOTH_TOKEN))
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    r = client.post(
        "/admin/users/victim/token/revoke",
        data={"csrf": token.group(1)}, headers=_cookie(BOTH_TOKEN),
    )  # fmt: skip
    assert r.status_code == 303, r.text
    assert store.state.tokens["victim"].revoked_at is not None
