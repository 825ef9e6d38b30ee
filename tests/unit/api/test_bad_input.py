"""Table-driven bad input: every limit of spec §1.2.7 and malformed bodies.

Each case must give its exact status and code, never a 500, and leave the state unchanged
(projects, jobs and users read back identically).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.unit.api.conftest import ADMIN, WORKER, Api, error, seed_users

P = "/api/v1/admin/projects/p"
W = "/api/v1/projects/p/jobs"
RECEIPT = {
    "id": "r", "issuer": "i", "object_id": "o", "checksum": "md5:" + "0" * 32,
    "size_bytes": 1, "accepted_at": 1,
}  # fmt: skip
BIG_OBJECT = {"k": "x" * 8190}  # canonical size 8198 > 8192


def claim(**kw: Any) -> dict[str, Any]:
    return {"worker_id": "w", "max_jobs": 1, "lease_seconds": 30, "policy_version": 1, **kw}


def complete(item: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    base = {"job_id": 1, "attempt_id": "ATTEMPT", "outcome": {"kind": "success"}}
    return {"worker_id": "w1", "items": [{**base, **(item or {})}], **kw}


def fail(item: dict[str, Any] | None = None) -> dict[str, Any]:
    base = {"job_id": 1, "attempt_id": "ATTEMPT", "retryable": True, "error": {"code": "e"}}
    return {"worker_id": "w1", "items": [{**base, **(item or {})}]}


def extend(**kw: Any) -> dict[str, Any]:
    return {
        "worker_id": "w1",
        "extend_seconds": 30,
        "items": [{"job_id": 1, "attempt_id": "ATTEMPT"}],
        **kw,
    }


def job(**kw: Any) -> dict[str, Any]:
    return {"jobs": [{"id": "new", "value": "v", **kw}]}


def put(**kw: Any) -> dict[str, Any]:
    return {"status": "active", **kw}


BAD_JSON = "invalid JSON body"
# (name, method, path, body (dict → JSON, bytes → raw), extra headers, status, code, message prefix)
# fmt: off
CASES: list[tuple[str, str, str, Any, dict[str, str], int, str, str]] = [
    # decoding (spec §1.3)
    ("no content type", "POST", W + "/claim", claim(), {"Content-Type": ""}, 400, "invalid_request", "content type must be application/json"),
    ("text content type", "POST", P + "/jobs", job(), {"Content-Type": "text/plain"}, 400, "invalid_request", "content type must be application/json"),
    ("empty body", "POST", W + "/claim", b"", {}, 400, "invalid_request", "invalid JSON body: EOF"),
    ("whitespace body", "PUT", P, b"  \n", {}, 400, "invalid_request", "invalid JSON body: EOF"),
    ("trailing data", "POST", W + "/claim", b'{"worker_id":"w"} {}', {}, 400, "invalid_request", "request body must contain exactly one JSON object"),
    ("malformed", "POST", W + "/claim", b'{"worker_id":', {}, 400, "invalid_request", BAD_JSON),
    ("array root", "POST", W + "/claim", b"[]", {}, 400, "invalid_request", BAD_JSON),
    ("null root", "POST", W + "/claim", b"null", {}, 400, "invalid_request", "invalid claim request"),
    ("unknown root key", "POST", W + "/claim", claim(extra=1), {}, 400, "invalid_request", BAD_JSON),
    ("unknown item key", "POST", W + "/complete", complete({"x": 1}), {}, 400, "invalid_request", BAD_JSON),
    ("unknown outcome key", "POST", W + "/complete", complete({"outcome": {"kind": "success", "x": 1}}), {}, 400, "invalid_request", BAD_JSON),
    ("unknown receipt key", "POST", W + "/complete", complete({"artifact_receipts": [{**RECEIPT, "x": 1}]}), {}, 400, "invalid_request", BAD_JSON),
    ("unknown error key", "POST", W + "/fail", fail({"error": {"code": "e", "x": 1}}), {}, 400, "invalid_request", BAD_JSON),
    ("unknown job key", "POST", P + "/jobs", job(x=1), {}, 400, "invalid_request", BAD_JSON),
    ("float for int", "POST", W + "/claim", claim(max_jobs=1.0), {}, 400, "invalid_request", BAD_JSON),
    ("string for int", "POST", W + "/claim", claim(max_jobs="1"), {}, 400, "invalid_request", BAD_JSON),
    ("exponent for int", "POST", W + "/claim", b'{"worker_id":"w","max_jobs":1e3}', {}, 400, "invalid_request", BAD_JSON),
    ("random_key 2^31", "POST", P + "/jobs", job(random_key=2**31), {}, 400, "invalid_request", BAD_JSON),
    ("attr not object", "POST", P + "/jobs", job(attr=[1]), {}, 400, "invalid_request", BAD_JSON),
    ("body over 8 MiB", "POST", P + "/jobs", b'{"jobs":[{"value":"' + b"x" * (8 * 1024 * 1024) + b'"}]}', {}, 400, "invalid_request", "request body exceeds 8388608 bytes"),
    # claim (§1.7.11)
    ("max_jobs 0", "POST", W + "/claim", claim(max_jobs=0), {}, 400, "invalid_request", "invalid claim request"),
    ("max_jobs 257", "POST", W + "/claim", claim(max_jobs=257), {}, 400, "invalid_request", "invalid claim request"),
    ("max_jobs null", "POST", W + "/claim", claim(max_jobs=None), {}, 400, "invalid_request", "invalid claim request"),
    ("lease 0", "POST", W + "/claim", claim(lease_seconds=0), {}, 400, "invalid_request", "invalid claim request"),
    ("lease 3601", "POST", W + "/claim", claim(lease_seconds=3601), {}, 400, "invalid_request", "invalid claim request"),
    ("17 accept types", "POST", W + "/claim", claim(accept_types=["seed"] * 17), {}, 400, "invalid_request", "invalid claim request"),
    ("bad accept type", "POST", W + "/claim", claim(accept_types=["seed", "x"]), {}, 400, "invalid_request", "accept_types may contain only seed or asset"),
    ("policy version 0", "POST", W + "/claim", claim(policy_version=0), {}, 400, "invalid_request", "invalid claim request"),
    ("bad worker id", "POST", W + "/claim", claim(worker_id="a b"), {}, 400, "invalid_request", "invalid claim request"),
    ("worker id 129", "POST", W + "/claim", claim(worker_id="w" * 129), {}, 400, "invalid_request", "invalid claim request"),
    # batches (§1.7.12–14)
    ("0 complete items", "POST", W + "/complete", {"worker_id": "w1", "items": []}, {}, 400, "invalid_request", "invalid completion batch"),
    ("257 complete items", "POST", W + "/complete", {"worker_id": "w1", "items": complete()["items"] * 257}, {}, 400, "invalid_request", "invalid completion batch"),
    ("257 fail items", "POST", W + "/fail", {"worker_id": "w1", "items": fail()["items"] * 257}, {}, 400, "invalid_request", "invalid failure batch"),
    ("257 extend items", "POST", W + "/extend-lease", extend(items=extend()["items"] * 257), {}, 400, "invalid_request", "invalid lease extension batch"),
    ("extend 3601", "POST", W + "/extend-lease", extend(extend_seconds=3601), {}, 400, "invalid_request", "invalid lease extension batch"),
    ("job id 0", "POST", W + "/complete", complete({"job_id": 0}), {}, 400, "invalid_request", "invalid job or attempt ID"),
    ("attempt id bad", "POST", W + "/extend-lease", extend(items=[{"job_id": 1, "attempt_id": "a/b"}]), {}, 400, "invalid_request", "invalid job or attempt ID"),
    ("outcome kind", "POST", W + "/complete", complete({"outcome": {"kind": "done"}}), {}, 400, "invalid_request", "outcome kind must be success, http_error, or skipped"),
    ("outcome missing", "POST", W + "/complete", complete({"outcome": None}), {}, 400, "invalid_request", "outcome kind must be success, http_error, or skipped"),
    ("outcome code 1000", "POST", W + "/complete", complete({"outcome": {"kind": "http_error", "code": 1000}}), {}, 400, "invalid_request", "outcome code must be between 0 and 999"),
    ("outcome uri 4097", "POST", W + "/complete", complete({"outcome": {"kind": "success", "uri": "u" * 4097}}), {}, 400, "invalid_request", "outcome URI exceeds 4096 bytes"),
    ("outcome meta big", "POST", W + "/complete", complete({"outcome": {"kind": "success", "meta": BIG_OBJECT}}), {}, 400, "invalid_request", "invalid outcome meta: "),
    ("17 receipts", "POST", W + "/complete", complete({"artifact_receipts": [RECEIPT] * 17}), {}, 400, "invalid_request", "at most 16 artifact receipts are allowed per job"),
    ("checksum upper", "POST", W + "/complete", complete({"artifact_receipts": [{**RECEIPT, "checksum": "BLAKE3:0123"}]}), {}, 400, "invalid_request", "invalid artifact receipt"),
    ("checksum odd", "POST", W + "/complete", complete({"artifact_receipts": [{**RECEIPT, "checksum": "blake3:0"}]}), {}, 400, "invalid_request", "invalid artifact receipt"),
    ("receipt size 0", "POST", W + "/complete", complete({"artifact_receipts": [{**RECEIPT, "size_bytes": 0}]}), {}, 400, "invalid_request", "invalid artifact receipt"),
    ("receipt issuer 513", "POST", W + "/complete", complete({"artifact_receipts": [{**RECEIPT, "issuer": "i" * 513}]}), {}, 400, "invalid_request", "invalid artifact receipt"),
    ("error code 65", "POST", W + "/fail", fail({"error": {"code": "e" * 65}}), {}, 400, "invalid_request", "execution error code is invalid"),
    ("error message 2049", "POST", W + "/fail", fail({"error": {"code": "e", "message": "m" * 2049}}), {}, 400, "invalid_request", "execution error message is invalid"),
    ("error details big", "POST", W + "/fail", fail({"error": {"code": "e", "details": BIG_OBJECT}}), {}, 400, "invalid_request", "invalid execution error details: "),
    # JobSpec (§1.2.2)
    ("job id bad", "POST", P + "/jobs", job(id="a b"), {}, 400, "invalid_job", "id must be 1-128 ASCII bytes matching [A-Za-z0-9._:-]+"),
    ("job id 129", "POST", P + "/jobs", job(id="i" * 129), {}, 400, "invalid_job", "id must be 1-128 ASCII bytes"),
    ("value empty", "POST", P + "/jobs", job(value=""), {}, 400, "invalid_job", "value must be valid UTF-8 and at most 8192 bytes"),
    ("value 8193", "POST", P + "/jobs", job(value="é" * 4096 + "x"), {}, 400, "invalid_job", "value must be valid UTF-8 and at most 8192 bytes"),
    ("type bad", "POST", P + "/jobs", job(type="page"), {}, 400, "invalid_job", "type must be seed or asset"),
    ("via 8193", "POST", P + "/jobs", job(via="v" * 8193), {}, 400, "invalid_job", "via must be valid UTF-8 and at most 8192 bytes"),
    ("hops -1", "POST", P + "/jobs", job(hops=-1), {}, 400, "invalid_job", "hops must be non-negative"),
    ("attr big", "POST", P + "/jobs", job(attr=BIG_OBJECT), {}, 400, "invalid_job", "invalid attr: object exceeds 8192 bytes"),
    ("escaped value", "POST", P + "/jobs", job(value="<" * 8192), {}, 400, "invalid_job", "normalized JobSpec exceeds 32 KiB"),
    ("no jobs", "POST", P + "/jobs", {"jobs": []}, {}, 400, "invalid_request", "jobs must contain at least one item"),
    ("jobs null", "POST", P + "/jobs", {"jobs": None}, {}, 400, "invalid_request", "jobs must contain at least one item"),
    # project policy (§1.7.2)
    ("max_jobs_per_claim 257", "PUT", P, put(max_jobs_per_claim=257), {}, 400, "invalid_request", "max_jobs_per_claim"),
    ("max_resets 1001", "PUT", P, put(max_resets=1001), {}, 400, "invalid_request", "max_resets"),
    ("max_resets -1", "PUT", P, put(max_resets=-1), {}, 400, "invalid_request", "max_resets"),
    ("lease 0", "PUT", P, put(recommended_lease_seconds=0), {}, 400, "invalid_request", "recommended_lease_seconds"),
    ("lease 3601", "PUT", P, put(recommended_lease_seconds=3601), {}, 400, "invalid_request", "recommended_lease_seconds"),
    ("qps negative", "PUT", P, put(dispatch_qps=-1), {}, 400, "invalid_request", "project QPS must be a positive finite number"),
    ("worker qps 0", "PUT", P, put(worker_claim_qps=0), {}, 400, "invalid_request", "project QPS must be a positive finite number"),
    ("qps overflow", "PUT", P, b'{"status":"active","dispatch_qps":1e999}', {}, 400, "invalid_request", BAD_JSON),
    ("65 versions", "PUT", P, put(client_versions=[f"v{i}" for i in range(65)]), {}, 400, "invalid_request", "client_versions must contain at most 64 versions"),
    ("version 129", "PUT", P, put(client_versions=["v" * 129]), {}, 400, "invalid_request", "client_versions entries must be non-empty"),
    ("version padded", "PUT", P, put(client_versions=[" v1"]), {}, 400, "invalid_request", "client_versions entries must be non-empty"),
    ("version empty", "PUT", P, put(client_versions=[""]), {}, 400, "invalid_request", "client_versions entries must be non-empty"),
    ("bad status", "PUT", P, put(status="paused"), {}, 400, "invalid_request", "invalid project"),
]
# fmt: on


@pytest.fixture(scope="module")
async def shared() -> AsyncIterator[Api]:
    """One app for the whole table (each case gets its own project): app start-up dominates
    a case's cost otherwise."""
    clock = ManualClock()
    store = MemoryStore(clock)
    await seed_users(store)
    app = create_app(Settings(sweep_interval_s=0), store, clock)
    async with AsyncTestClient(app, raise_server_exceptions=False) as client:
        yield Api(client, store, clock)


async def _snapshot(api: Api, project: str) -> tuple[Any, ...]:
    base = f"/api/v1/admin/projects/{project}"
    summary = (await api.client.get(base, headers=ADMIN)).json()
    jobs = (await api.client.get(base + "/jobs?limit=200", headers=ADMIN)).json()
    users = (await api.client.get("/api/v1/admin/users", headers=ADMIN)).json()
    return summary, jobs, users


@pytest.mark.parametrize(
    ("index", "method", "path", "body", "headers", "status", "code", "message"),
    [(i, *c[1:]) for i, c in enumerate(CASES)],
    ids=[c[0] for c in CASES],
)
async def test_bad_input(
    shared: Api,
    index: int,
    method: str,
    path: str,
    body: Any,
    headers: dict[str, str],
    status: int,
    code: str,
    message: str,
) -> None:
    api, project = shared, f"bad{index}"
    path = path.replace("/projects/p", f"/projects/{project}", 1)
    await api.put_project(project, max_resets=5)
    await api.enqueue(project, [{"id": "a", "value": "v"}, {"id": "b", "value": "w"}])
    (claimed,) = (await api.claim(project, max_jobs=1, worker_id="w1")).json()["jobs"]
    if isinstance(body, dict):
        text = json.dumps(body).replace("ATTEMPT", claimed["attempt_id"])
        text = text.replace('"job_id": 1,', f'"job_id": {claimed["job_id"]},')
        raw = text.encode()
    else:
        raw = body
    before = await _snapshot(api, project)
    auth = WORKER if path.startswith("/api/v1/projects/") else ADMIN
    all_headers = {**auth, "Content-Type": "application/json", **headers}
    if all_headers["Content-Type"] == "":
        del all_headers["Content-Type"]
    r = await api.client.request(method, path, content=raw, headers=all_headers)
    assert r.status_code == status, r.text
    err = error(r)
    assert err["code"] == code
    assert err["message"].startswith(message), err["message"]
    assert await _snapshot(api, project) == before


async def test_free_form_objects_accept_unknown_keys(api: Api) -> None:
    await api.put_project("p")
    r = await api.enqueue(
        "p", [{"id": "a", "value": "v", "attr": {"anything": {"nested": [1, None]}}}]
    )
    assert r.status_code == 200
    (j,) = (await api.claim("p")).json()["jobs"]
    item = {
        "job_id": j["job_id"],
        "attempt_id": j["attempt_id"],
        "outcome": {"kind": "success", "meta": {"free": {"x": 1}}},
    }
    r = await api.post_worker("p", "complete", {"worker_id": "w1", "items": [item]})
    assert r.json()["results"][0]["status"] == "applied"


async def test_streamed_body_over_8_mib_without_length(api: Api) -> None:
    """No Content-Length: the cap applies while reading (raw ASGI, as chunked uploads arrive)."""
    from hq_apps.api.app import create_app
    from hq_apps.settings import Settings

    await api.put_project("p")
    app = create_app(Settings(sweep_interval_s=0), api.store, api.clock)
    chunks = [b'{"jobs":[{"value":"', *[b"x" * (1024 * 1024)] * 9, b'"}]}']
    messages = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    messages[-1]["more_body"] = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": P + "/jobs", "raw_path": (P + "/jobs").encode(),
        "query_string": b"", "root_path": "", "server": ("test", 80), "client": ("c", 1),
        "headers": [(b"authorization", b"Bearer admin-token"), (b"content-type", b"application/json")],
    }  # fmt: skip
    await app(scope, receive, send)
    assert sent[0]["status"] == 400
    body = b"".join(m.get("body", b"") for m in sent[1:])
    assert b"request body exceeds 8388608 bytes" in body
    assert (await api.counts())["todo"] == 0


async def test_extreme_but_valid_qps_is_accepted(api: Api) -> None:
    for qps in (1e-300, 1e300):
        r = await api.client.put(P, json=put(dispatch_qps=qps, worker_claim_qps=qps), headers=ADMIN)
        assert r.status_code == 200 and r.json()["dispatch_qps"] == qps
