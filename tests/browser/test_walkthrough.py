"""The dashboard in a real browser: admin work, then a new worker's self-service (spec §5)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import httpx
import pytest

from hq_adapters.sourcefile.pack import pack_values
from hq_domain.projects import IdentityMode
from tests.browser.conftest import LiveHQ

pytestmark = pytest.mark.browser
# Screenshots refresh docs/screenshots only when asked (HQ_UPDATE_SCREENSHOTS=1), so an
# ordinary test run never dirties the checkout; otherwise they go to a temporary folder.
SHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("HQ_UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "savewebhq-screenshots"
)
VERSION = "browser-test/1"
VIEWPORT = {"width": 1440, "height": 900}
SOURCE_JOBS = 50_000  # a realistic project: the screenshots must read well at this size


def _realistic_urls(n: int) -> bytes:
    """URLs shaped like a real crawl frontier: long paths, slugs and query strings."""
    sections = ["news/world", "sport/football", "video/clips", "blog/2024/05", "tv/shows"]
    lines = []
    for i in range(n):
        section = sections[i % len(sections)]
        slug = f"article-{i:06d}-{'the-quick-brown-fox-jumps'[: 8 + i % 17]}"
        query = f"?ref=feed&page={i % 40}" if i % 3 == 0 else ""
        lines.append(f"https://www.example-news.org/{section}/{slug}.html{query}")
    return ("\n".join(lines) + "\n").encode()


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _sign_in(page, hq: LiveHQ):  # type: ignore[no-untyped-def]
    page.goto(hq.url + "/")
    page.get_by_role("link", name="Continue with GitHub").click()
    page.wait_for_load_state()
    return page


def _worker_api(hq: LiveHQ, token: str, path: str, body: dict[str, object]) -> dict[str, object]:
    resp = httpx.post(
        f"{hq.url}/api/v1/projects/demo/jobs/{path}",
        json=body,
        headers={"Authorization": f"Bearer {token}", "X-SavewebHQ-Client-Version": VERSION},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_admin_and_worker_walkthrough(browser, live_hq: LiveHQ, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hq = live_hq
    admin_ctx = browser.new_context(viewport=VIEWPORT)
    page = admin_ctx.new_page()

    # Login page, then sign in as a team member.
    page.goto(hq.url + "/")
    _shot(page, "login")
    hq.github.set_identity(1001, "octo-admin", "active")
    _sign_in(page, hq)
    assert page.url == hq.url + "/admin"

    # Create a project.
    page.fill("#project_id", "demo")
    page.select_option("#identity_mode", "external_id")
    page.fill("#client_versions", VERSION)
    page.fill("#worker_claim_qps", "5")
    page.get_by_role("button", name="Create project").click()
    assert page.url == hq.url + "/admin/projects/demo"
    assert "external_id" in page.inner_text(".summary")

    # A second project, unique_value identity, random order, draining.
    page.goto(hq.url + "/admin")
    page.fill("#project_id", "backlog-2025")
    page.select_option("#identity_mode", "unique_value")
    page.select_option("#claim_order", "random")
    page.select_option("#status", "draining")
    page.get_by_role("button", name="Create project").click()
    page.fill("#jobs_json", json.dumps([{"value": f"https://backlog.example/{i}"} for i in range(12)]))
    page.get_by_role("button", name="Enqueue").click()
    assert "todo 12" in page.inner_text(".legend").replace("\n", " ")
    page.goto(hq.url + "/admin/projects/demo")

    # Enqueue a JSON batch (one bad attempt first: the form keeps the text and shows the error),
    # then plain URLs one per line (each gets its stable j1_ ID).
    page.fill("#jobs_json", '[{"value": "https://example.org/"}]')
    page.get_by_role("button", name="Enqueue").click()
    assert "id is required for external_id projects" in page.inner_text(".flash.error")
    jobs = [{"id": f"page-{i}", "value": f"https://example.org/page/{i}", "attr": {"depth": i}} for i in range(3)]
    page.fill("#jobs_json", json.dumps(jobs))
    page.get_by_role("button", name="Enqueue").click()
    page.fill("#jobs_json", "https://example.org/about\nhttps://example.org/contact\n")
    page.get_by_role("button", name="Enqueue").click()
    assert page.url == hq.url + "/admin/projects/demo"
    assert page.locator("table.jobs tbody tr").count() == 5

    # Upload a source file of 50,000 URLs, packed as `source pack` does (j1_ IDs).
    urls = tmp_path / "urls.txt"
    urls.write_bytes(_realistic_urls(SOURCE_JOBS))
    source = tmp_path / "demo.jobs.jsonl.zst"
    with urls.open("rb") as reader:
        assert pack_values(reader, str(source), IdentityMode.EXTERNAL_ID) == SOURCE_JOBS
    page.set_input_files("#source_file", str(source))
    page.get_by_role("button", name="Import").click()
    assert page.url == hq.url + "/admin/projects/demo"
    assert f"todo {SOURCE_JOBS + 5}" in page.inner_text(".legend").replace("\n", " ")

    # Users: create a worker robot and rotate its token (shown once on the result page).
    page.get_by_role("link", name="Users").click()
    page.fill("#user_id", "robot")
    page.get_by_role("button", name="Save user").click()
    row = page.locator("tr", has=page.locator("code", has_text="robot"))
    row.get_by_role("button", name="Create token").click()
    robot_token = page.inner_text("#token").strip()
    assert robot_token.startswith("hq_")
    _shot(page, "token")

    # The robot claims two jobs, completes one and fails the other for good.
    claimed = _worker_api(hq, robot_token, "claim", {
        "worker_id": "robot-1", "max_jobs": 2, "lease_seconds": 60, "policy_version": 1,
    })["jobs"]
    done, failed = claimed  # type: ignore[misc]
    _worker_api(hq, robot_token, "complete", {"worker_id": "robot-1", "items": [{
        "job_id": done["job_id"], "attempt_id": done["attempt_id"],
        "outcome": {"kind": "success", "code": 200, "uri": "https://example.org/page/0", "meta": {"bytes": 1234}},
        "artifact_receipts": [{"id": "r1", "issuer": "warc-store", "object_id": "warc/0001", "checksum": "sha1:" + "ab" * 20, "size_bytes": 5120, "accepted_at": 1_764_000_000}],
    }]})
    _worker_api(hq, robot_token, "fail", {"worker_id": "robot-1", "items": [{
        "job_id": failed["job_id"], "attempt_id": failed["attempt_id"], "retryable": False,
        "error": {"code": "http_500", "message": "upstream broke", "details": {"attempts": 1}},
    }]})
    _worker_api(hq, robot_token, "claim", {
        "worker_id": "robot-2", "max_jobs": 3, "lease_seconds": 600, "policy_version": 1,
    })

    page.goto(hq.url + "/admin")
    _shot(page, "admin-projects")
    page.get_by_role("link", name="demo").click()
    _shot(page, "project")
    # A j1_ ID is shortened in the table, whole in the tooltip; VALUE keeps the width.
    cell = page.locator("table.jobs td.ext-id code[title^='j1_']").first
    assert len(cell.get_attribute("title") or "") == 67 and "…" in cell.inner_text()
    value_box = page.locator("table.jobs td.value").nth(10).bounding_box()
    assert value_box is not None and value_box["width"] > 400, value_box
    first_range = page.inner_text(".pager")
    page.get_by_role("link", name="Next ›").click()
    assert page.inner_text(".pager") != first_range
    _shot(page, "project-page-2")
    page.get_by_role("link", name="‹ Previous").click()
    assert page.inner_text(".pager") == first_range

    # Open the completed job, then the failed one and requeue it.
    page.goto(f"{hq.url}/admin/projects/demo/jobs/{done['job_id']}")
    assert "warc-store" in page.inner_text("body")
    _shot(page, "job-done")
    page.goto(f"{hq.url}/admin/projects/demo/jobs/{failed['job_id']}")
    assert "upstream broke" in page.inner_text("body")
    assert "Failed by\trobot-1" in page.inner_text("dl.kv") or "Failed by\nrobot-1" in page.inner_text("dl.kv")
    _shot(page, "job-failed")
    page.get_by_role("button", name="Requeue").click()
    assert page.locator("h1 .pill").inner_text() == "todo"

    page.get_by_role("link", name="Workers").click()
    assert "robot-2" in page.inner_text("table")
    _shot(page, "workers")

    # Deleting a project takes a confirmation page where the ID is typed, then says what went.
    page.goto(hq.url + "/admin/projects/backlog-2025")
    page.get_by_role("link", name="Delete backlog-2025…").click()
    page.fill("#confirm_project_id", "backlog-2025")
    _shot(page, "delete-confirm")
    page.get_by_role("button", name="Delete backlog-2025 and its jobs").click()
    assert page.url == hq.url + "/admin"
    assert "Deleted project backlog-2025 and its 12 jobs." in page.inner_text(".flash.ok")
    _shot(page, "deleted")

    # A new GitHub user registers and waits.
    hq.github.set_identity(2002, "newbie")
    newbie_ctx = browser.new_context(viewport=VIEWPORT)
    newbie = _sign_in(newbie_ctx.new_page(), hq)
    assert "Worker registration" in newbie.inner_text("h1")
    assert "pending" in newbie.inner_text("body")
    _shot(newbie, "registration")

    # The admin activates them.
    page.goto(hq.url + "/admin/users?user_id=gh_2002")
    page.select_option("#status", "active")
    page.get_by_label("worker").check()
    page.get_by_role("button", name="Save user").click()
    assert "gh_2002" in page.inner_text("table")
    _shot(page, "users")

    # They sign in, generate a token and use it on the worker API.
    _sign_in(newbie, hq)
    assert newbie.url == hq.url + "/worker"
    assert not newbie.locator("#token").is_visible()  # hidden until clicked
    newbie.get_by_role("button", name="Generate token").click()
    token = newbie.inner_text("#token").strip()
    assert token.startswith("hq_") and len(token) == 46
    newbie.goto(hq.url + "/worker")
    assert not newbie.locator("#token").is_visible()
    newbie.get_by_text("View token").click()
    assert newbie.locator("#token").is_visible()
    _shot(newbie, "worker")
    whoami = httpx.get(f"{hq.url}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert whoami.status_code == 200 and whoami.json() == {"user_id": "gh_2002"}

    # The worker cannot open admin pages.
    resp = newbie.goto(hq.url + "/admin")
    assert resp is not None and resp.status == 403
    admin_ctx.close()
    newbie_ctx.close()
