"""Tokens and secrets never reach the logs: a real ``tracker serve`` (web dashboard on, against
the loopback fake GitHub) handles good, bad and rotated credentials and a full OAuth login;
afterwards its captured stdout+stderr must not contain any of them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from hq_apps.web import security
from tests.fake_github import FakeGitHub, serve_asgi_in_thread
from tests.faults.harness import ADMIN, ADMIN_TOKEN, WORKER, WORKER_TOKEN, Tracker, seed

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

GH_SECRET = "gh-client-secret-DO-NOT-LOG-42"
WEB_SECRET = "d2ViLXNlY3JldC1ETy1OT1QtTE9HLTAxMjM0NTY3ODlhYmNkZWY"  # base64url, 38 bytes


def _secret_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text + "\n")
    path.chmod(0o600)
    return str(path)


def _login(base: str) -> tuple[httpx.Client, list[str]]:
    """OAuth through the real process and the fake; returns the browser and what it saw."""
    seen: list[str] = []
    browser = httpx.Client(base_url=base, follow_redirects=False, timeout=10)
    start = browser.get("/auth/github/start")
    assert start.status_code == 302, start.text
    authorize = httpx.get(start.headers["location"], follow_redirects=False, timeout=10)
    back = urlsplit(authorize.headers["location"])
    seen += re.findall(r"(?:code|state)=([^&]+)", back.query)
    done = browser.get(f"{back.path}?{back.query}")
    assert done.status_code == 303, done.text
    session = browser.cookies.get(security.SESSION_COOKIE)
    assert session
    seen.append(session)
    return browser, seen


async def test_no_token_or_secret_is_logged(pg_dsn: str, tmp_path: Path) -> None:
    await seed(pg_dsn, "logs", 3)
    fake = FakeGitHub("hq-client", GH_SECRET, org="o", team="t")
    fake.set_identity(99, "octo", "active")
    unknown = "hq_UnknownTokenShouldNotBeLogged0123456789abcdefg"
    overlong = "L" * 2000
    with serve_asgi_in_thread(fake.app()) as gh_url:
        tracker = Tracker(pg_dsn, tmp_path)
        env = {
            "HQ_PUBLIC_URL": tracker.url, "HQ_GITHUB_CLIENT_ID": "hq-client",
            "HQ_GITHUB_CLIENT_SECRET_FILE": _secret_file(tmp_path, "gh", GH_SECRET),
            "HQ_WEB_SESSION_SECRET_FILE": _secret_file(tmp_path, "web", WEB_SECRET),
            "HQ_OAUTH_ADMIN_ORG": "o", "HQ_OAUTH_ADMIN_TEAM": "t",
            "HQ_GITHUB_URL": gh_url, "HQ_GITHUB_API_URL": gh_url,
        }  # fmt: skip
        tracker.start(extra_env=env)
        secrets = [ADMIN_TOKEN, WORKER_TOKEN, unknown, overlong, GH_SECRET, WEB_SECRET]
        try:
            with httpx.Client(base_url=tracker.url, timeout=10) as api:
                assert api.get("/api/v1/whoami", headers=ADMIN).status_code == 200
                claim = {"worker_id": "w", "max_jobs": 1, "lease_seconds": 30, "policy_version": 1}
                assert api.post("/api/v1/projects/logs/jobs/claim", json=claim,
                                headers=WORKER).status_code == 200  # fmt: skip
                for auth in (f"Bearer {unknown}", f"Bearer {overlong}", f"Basic {ADMIN_TOKEN}",
                             f"Bearer {ADMIN_TOKEN} {WORKER_TOKEN}", ADMIN_TOKEN):  # fmt: skip
                    assert (
                        api.get("/api/v1/whoami", headers={"Authorization": auth}).status_code
                        == 401
                    )
                rotated = api.post("/api/v1/admin/users/worker/machine-token", headers=ADMIN)
                assert rotated.status_code == 201
                secrets.append(rotated.json()["token"])
                assert api.get("/api/v1/admin/users/worker/machine-token",
                               headers=ADMIN).status_code == 200  # fmt: skip
                # a token in the body and the query string of bad requests
                api.post("/api/v1/admin/projects/logs/jobs", headers=ADMIN,
                         content=f'{{"jobs": "{ADMIN_TOKEN}"}}')  # fmt: skip
                api.get(f"/api/v1/whoami?token={ADMIN_TOKEN}")
            browser, seen = _login(tracker.url)
            secrets += seen
            page = browser.get("/worker")
            csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/admin").text)
            assert csrf
            secrets.append(csrf.group(1))
            shown = browser.post("/admin/users/worker/token", data={"csrf": csrf.group(1)})
            assert shown.status_code == 200, shown.text
            token_shown = re.findall(r"hq_[A-Za-z0-9_-]{43}", shown.text)
            assert token_shown
            secrets += token_shown
            browser.post("/logout", data={"csrf": csrf.group(1)})
            browser.close()
            del page
        finally:
            tracker.stop()
    secrets += list(fake._tokens)  # GitHub access tokens the tracker received
    logs = tracker.output()
    assert '"msg":"request"' in logs  # the request log was on: there was something to leak into
    leaked = [s[:12] + "…" for s in secrets if s and s in logs]
    assert not leaked, f"secrets found in the tracker's output: {leaked}"


def test_cli_errors_do_not_echo_secret_contents(tmp_path: Path) -> None:
    bad = _secret_file(tmp_path, "bad-web", "not base64 !! SECRET-CONTENT-XYZ")
    gh = _secret_file(tmp_path, "gh", GH_SECRET)
    r = subprocess.run(
        [sys.executable, "-m", "hq_apps.cli.tracker", "serve", "--listen", "127.0.0.1:1",
         "--database-url", "postgresql://u:db-password-XYZ@127.0.0.1:1/x",
         "--public-url", "http://hq.test", "--github-client-id", "c",
         "--github-client-secret-file", gh, "--web-session-secret-file", bad,
         "--oauth-admin-org", "o", "--oauth-admin-team", "t"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 1
    out = r.stdout + r.stderr
    assert "SECRET-CONTENT-XYZ" not in out and GH_SECRET not in out, out
