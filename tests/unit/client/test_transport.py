"""Config and URL rules, request headers/bodies, response validation and typed errors."""

from __future__ import annotations

import json
import math
import string

import httpx
import pytest

from hq_adapters.client import (
    APIError,
    ClientUpgradeRequired,
    Config,
    InvalidMachineToken,
    NetworkError,
    NotFound,
    PermissionDenied,
    ProjectNotActive,
    ProjectQueue,
    RateLimited,
    SavewebHQError,
    ServerError,
    TransportError,
    default_job_id,
    open_project_queue,
    whoami,
)
from hq_adapters.client.core import new_worker_id
from hq_adapters.client.wire import MAX_RESPONSE_BYTES
from tests.unit.client.conftest import CONFIG
from tests.unit.client.fakes import NO_STORE, FakeTracker, error_response, json_response


def _queue(handler) -> ProjectQueue:
    return ProjectQueue(CONFIG, "proj", transport=httpx.MockTransport(handler), renew=False)


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tracker_url": ""}, "required"),
        ({"machine_token": ""}, "required"),
        ({"client_version": ""}, "required"),
        ({"request_timeout": 0.5}, "between 1 and 600"),
        ({"request_timeout": 601}, "between 1 and 600"),
    ],
)
def test_config_validation(kwargs, message):
    base = {"tracker_url": "https://hq.test", "machine_token": "t", "client_version": "v"}
    config = Config(**{**base, **kwargs})
    with pytest.raises(ValueError, match=message):
        config.validate()
    with pytest.raises(ValueError, match=message):
        open_project_queue(config, "proj")


def test_config_defaults_and_project_required():
    config = Config("https://hq.test", "t", "v")
    assert (config.allow_http_tracker, config.request_timeout) == (False, 45.0)
    config.validate()
    with pytest.raises(ValueError, match="project_id is required"):
        ProjectQueue(config, "")


@pytest.mark.parametrize(
    "url",
    [
        "http://hq.test",
        "ftp://hq.test",
        "https://",
        "https://hq.test/?q=1",
        "https://hq.test/#f",
        "https://hq.test:99999",
    ],
)
def test_disallowed_urls(url):
    with pytest.raises(TransportError):
        ProjectQueue(Config(url, "t", "v"), "proj")


def test_http_allowed_only_when_asked():
    ProjectQueue(Config("http://127.0.0.1:8080", "t", "v", allow_http_tracker=True), "p").close()


def test_worker_id_is_seven_lowercase_alphanumerics():
    queue = ProjectQueue(CONFIG, "proj", renew=False)
    ids = {new_worker_id() for _ in range(200)} | {queue.worker_id}
    assert len(ids) > 195
    for worker_id in ids:
        assert len(worker_id) == 7 and set(worker_id) <= set(string.ascii_lowercase + string.digits)


def test_default_job_id_matches_domain_vectors():
    assert default_job_id("", "x") == default_job_id("seed", "x")
    assert default_job_id("asset", "x") != default_job_id("seed", "x")
    assert default_job_id(None, "x").startswith("j1_") and len(default_job_id(None, "x")) == 67


# -- requests -----------------------------------------------------------------------------------
def test_headers_path_and_body_on_every_request(tracker: FakeTracker, queue):
    queue.claim(max_jobs=3, lease_seconds=60)
    queue.complete([{"job_id": 1, "attempt_id": "a"}])
    policy, claim, complete = tracker.requests
    for request in tracker.requests:
        assert request.headers["authorization"] == "Bearer tok-123"
        assert request.headers["x-savewebhq-client-version"] == "v1.2"
        assert request.headers["accept"] == "application/json"
        assert request.headers["cache-control"] == "no-store"
    assert policy.method == "GET" and "content-type" not in policy.headers
    assert str(policy.url) == "https://hq.test/base/api/v1/projects/proj"
    assert str(claim.url) == "https://hq.test/base/api/v1/projects/proj/jobs/claim"
    assert claim.headers["content-type"] == "application/json"
    assert claim.content == (
        b'{"worker_id":"' + queue.worker_id.encode() + b'","max_jobs":3,"lease_seconds":60,'
        b'"accept_types":[],"policy_version":1}'
    )
    assert json.loads(complete.content) == {
        "worker_id": queue.worker_id,
        "items": [{"job_id": 1, "attempt_id": "a"}],
    }


def test_project_id_is_path_escaped():
    seen = []

    def handler(request):
        seen.append(request.url.raw_path)
        return json_response(200, {"results": []})

    q = ProjectQueue(CONFIG, "a/b c", transport=httpx.MockTransport(handler), renew=False)
    q.fail([])
    assert seen == [b"/base/api/v1/projects/a%2Fb%20c/jobs/fail"]


def test_items_pass_through_unchanged(tracker: FakeTracker, queue):
    items = [{"job_id": 7, "attempt_id": "x", "whatever": [1, {"k": "é"}]}] * 300
    queue.fail(items)
    queue.extend_lease(90, items[:2])
    fail, extend = tracker.bodies("fail"), tracker.bodies("extend-lease")
    assert fail == [{"worker_id": queue.worker_id, "items": items}]  # no splitting
    assert extend == [{"worker_id": queue.worker_id, "extend_seconds": 90, "items": items[:2]}]
    assert "é".encode() in tracker.requests[0].content  # UTF-8, not \u escapes


def test_nan_is_rejected_before_sending(tracker: FakeTracker, queue):
    with pytest.raises(ValueError):
        queue.complete([{"job_id": 1, "attempt_id": "a", "outcome": {"meta": {"x": math.nan}}}])
    assert tracker.requests == []


def test_whoami_sends_the_same_headers():
    seen = []

    def handler(request):
        seen.append(request)
        return json_response(200, {"user_id": "alice"})

    assert whoami(CONFIG, transport=httpx.MockTransport(handler)) == "alice"
    assert str(seen[0].url) == "https://hq.test/base/api/v1/whoami"
    assert seen[0].headers["x-savewebhq-client-version"] == "v1.2"
    assert seen[0].headers["cache-control"] == "no-store"


def test_whoami_rejects_empty_user():
    with pytest.raises(ValueError):
        whoami(CONFIG, transport=httpx.MockTransport(lambda r: json_response(200, {"user_id": ""})))


# -- responses ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cache_control", [None, "no-cache", "private, max-age=0"])
def test_responses_without_no_store_are_refused(cache_control):
    headers = {"Content-Type": "application/json"}
    if cache_control:
        headers["Cache-Control"] = cache_control
    q = _queue(lambda r: json_response(200, {"results": []}, headers))
    with pytest.raises(TransportError, match="cacheable"):
        q.complete([])


def test_error_responses_without_no_store_are_refused_too():
    headers = {"Content-Type": "application/json"}
    q = _queue(lambda r: json_response(403, {"error": {"code": "permission_denied"}}, headers))
    with pytest.raises(TransportError):
        q.complete([])


def test_no_store_is_case_insensitive():
    headers = {"Cache-Control": "NO-STORE", "Content-Type": "application/json"}
    assert _queue(lambda r: json_response(200, {"results": []}, headers)).complete([]) == {
        "results": []
    }


@pytest.mark.parametrize(
    "content", [b"[]", b"null", b"1", b'{"a":NaN}', b'{"a":Infinity}', b"{", b"{} {}", b"\xff"]
)
def test_body_must_be_one_json_object(content):
    q = _queue(lambda r: httpx.Response(200, headers=NO_STORE, content=content))
    with pytest.raises(TransportError):
        q.complete([])


def test_body_over_8_mib_is_refused_even_without_content_length():
    big = b'{"x":"' + b"a" * MAX_RESPONSE_BYTES + b'"}'

    def stream_handler(request):
        return httpx.Response(200, headers=NO_STORE, stream=httpx.ByteStream(big))

    def declared_handler(request):
        return httpx.Response(200, headers=NO_STORE, content=big)

    for handler in (stream_handler, declared_handler):
        with pytest.raises(TransportError, match="size limit"):
            _queue(handler).complete([])


def test_body_of_exactly_8_mib_is_accepted():
    filler = MAX_RESPONSE_BYTES - len(b'{"x":""}')
    body = b'{"x":"' + b"a" * filler + b'"}'
    assert len(body) == MAX_RESPONSE_BYTES
    result = _queue(lambda r: httpx.Response(200, headers=NO_STORE, content=body)).complete([])
    assert len(result["x"]) == filler


@pytest.mark.parametrize(
    "status, code, cls",
    [
        (400, "invalid_request", APIError),
        (401, "invalid_machine_token", InvalidMachineToken),
        (403, "permission_denied", PermissionDenied),
        (404, "not_found", NotFound),
        (409, "project_not_active", ProjectNotActive),
        (426, "client_upgrade_required", ClientUpgradeRequired),
        (429, "project_dispatch_rate_limited", RateLimited),
        (500, "internal_error", ServerError),
    ],
)
def test_error_envelopes_become_typed_api_errors(status, code, cls):
    q = _queue(lambda r: error_response(status, code, "boom", retry_after_ms=5))
    with pytest.raises(cls) as caught:
        q.complete([])
    error = caught.value
    assert type(error) is cls and isinstance(error, APIError) and isinstance(error, SavewebHQError)
    assert (error.status, error.code, error.message, error.retry_after_ms) == (
        status,
        code,
        "boom",
        5,
    )
    assert str(error) == f"HTTP {status}: {code}: boom"


def test_client_upgrade_required_exposes_allowed_versions():
    details = {"client_version": "v1.2", "client_versions": ["v2.0", "v2.1"]}
    q = _queue(lambda r: error_response(426, "client_upgrade_required", details=details))
    with pytest.raises(ClientUpgradeRequired) as caught:
        q.claim()
    assert caught.value.client_versions == ["v2.0", "v2.1"]
    assert caught.value.client_version == "v1.2"


def test_non_2xx_without_envelope_is_a_transport_error():
    q = _queue(lambda r: json_response(502, {"message": "bad gateway"}))
    with pytest.raises(TransportError, match="no error envelope"):
        q.complete([])


def test_api_error_tolerates_odd_envelopes():
    error = APIError(418, {"retry_after_ms": "soon", "details": []})
    assert (error.code, error.message, error.retryable, error.retry_after_ms, error.details) == (
        "internal_error",
        "request failed",
        False,
        0,
        {},
    )


def test_connection_failures_are_network_errors():
    def handler(request):
        raise httpx.ConnectError("refused")

    with pytest.raises(NetworkError, match="HTTP request failed"):
        _queue(handler).complete([])


def test_redirects_are_not_followed():
    calls = []

    def handler(request):
        calls.append(request.url.path)
        return httpx.Response(302, headers={"Location": "/elsewhere", **NO_STORE}, content=b"{}")

    with pytest.raises(TransportError):
        _queue(handler).complete([])
    assert len(calls) == 1
