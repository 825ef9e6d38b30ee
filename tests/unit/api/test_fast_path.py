"""The worker fast path answers exactly as Litestar's handlers do (hq_apps.api.fast_path).

Two apps on two memory stores that receive the same requests in the same order — one with
the fast path, one without — must send the same ASGI messages (status, every header in order,
body), write the same log fields and record the same metrics route. Attempt IDs come from a
counter both stores share and restart per request, so the two stores stay in step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hq_adapters.memory import MemoryStore
from hq_apps.api import observers
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.unit.api.conftest import ADMIN_TOKEN, VERSION, WORKER_TOKEN, seed_users

Headers = list[tuple[bytes, bytes]]
WORKER_HEADERS: Headers = [
    (b"host", b"tracker.test"),
    (b"authorization", f"Bearer {WORKER_TOKEN}".encode()),
    (b"x-savewebhq-client-version", VERSION.encode()),
    (b"content-type", b"application/json"),
]


class Counter:
    value = 0

    def next_id(self) -> str:
        self.value += 1
        return f"at_{self.value:024d}"


class Routes(observers.NullObserver):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.seen.append((method, route, status))


async def call(app: Any, method: str, path: str, headers: Headers, body: bytes) -> list[Any]:
    if not any(k == b"x-request-id" for k, _ in headers):
        headers = [*headers, (b"x-request-id", b"fixed")]  # else each app makes up its own
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": [*headers, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8080), "state": {},
    }  # fmt: skip
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)] or [b""]
    messages: list[Any] = []

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: Any) -> None:
        messages.append(message)

    await app(scope, receive, send)
    return messages


class Pair:
    """The same store contents and clock behind a fast-path app and a Litestar-only app."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.clock = ManualClock()
        self.stores = [MemoryStore(self.clock), MemoryStore(self.clock)]
        self.apps = [
            create_app(Settings(sweep_interval_s=0, worker_fast_path=fast), s, self.clock)
            for fast, s in zip((True, False), self.stores, strict=True)
        ]
        self.served = 0
        fast = self.apps[0].worker_fast_path
        assert fast is not None and self.apps[1].worker_fast_path is None
        serve = fast.serve

        async def counted(*args: Any) -> None:
            self.served += 1
            await serve(*args)

        fast.serve = counted  # type: ignore[method-assign]

    async def setup(self, **project: Any) -> None:
        for store in self.stores:
            await seed_users(store)
        admin = [(b"authorization", f"Bearer {ADMIN_TOKEN}".encode())]
        admin.append((b"content-type", b"application/json"))
        put = {"status": "active", "client_versions": [VERSION], **project}
        jobs = {"jobs": [{"id": f"j{i}", "value": f"https://e.test/{i}"} for i in range(40)]}
        for app in self.apps:
            done = await call(
                app, "PUT", "/api/v1/admin/projects/p", admin, json.dumps(put).encode()
            )
            assert done[0]["status"] == 200, done
            archived = json.dumps({**put, "status": "archived"}).encode()
            done = await call(app, "PUT", "/api/v1/admin/projects/q", admin, archived)
            assert done[0]["status"] == 200, done
            await call(
                app, "POST", "/api/v1/admin/projects/p/jobs", admin, json.dumps(jobs).encode()
            )

    async def both(self, method: str, path: str, headers: Headers, body: bytes) -> list[Any]:
        """Send to both apps; assert identical messages; return them."""
        start = self.counter.value
        out = []
        for app in self.apps:
            self.counter.value = start
            out.append(await call(app, method, path, headers, body))
        assert out[0] == out[1], (method, path, body[:200])
        return out[0]


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    c = Counter()
    monkeypatch.setattr("hq_adapters.memory.worker_ops.new_attempt_id", c.next_id)
    yield c


@pytest.fixture
def routes() -> Iterator[Routes]:
    r = Routes()
    observers.install(r)
    yield r
    observers.reset()


def body_of(messages: list[Any]) -> Any:
    return json.loads(messages[1]["body"])


def claim(n: int = 2, **extra: Any) -> bytes:
    doc = {"worker_id": "w1", "max_jobs": n, "lease_seconds": 60, "policy_version": 1, **extra}
    return json.dumps(doc).encode()


def rid(value: str) -> Headers:
    return [*WORKER_HEADERS, (b"x-request-id", value.encode())]


async def test_worker_operations_answer_the_same_both_ways(
    counter: Counter, routes: Routes, caplog: pytest.LogCaptureFixture
) -> None:
    pair = Pair(counter)
    await pair.setup()
    caplog.set_level(logging.INFO, logger="hq.api.request")
    caplog.clear()
    routes.seen.clear()
    claimed = body_of(await pair.both("POST", "/api/v1/projects/p/jobs/claim", rid("1"), claim(4)))
    jobs = claimed["jobs"]
    assert len(jobs) == 4
    ref = [{"job_id": j["job_id"], "attempt_id": j["attempt_id"]} for j in jobs]
    outcome = {"kind": "success", "code": 200, "uri": None, "meta": None}
    complete = {"worker_id": "w1", "items": [{**ref[0], "outcome": outcome}]}
    fail = {"worker_id": "w1", "items": [{**ref[1], "retryable": True,
            "error": {"code": "x", "message": "m", "details": None}}]}  # fmt: skip
    extend = {"worker_id": "w1", "extend_seconds": 120, "items": ref[2:]}
    big = {"worker_id": "w1", "items": [{**ref[3], "outcome": outcome}], "pad": "x" * 70_000}
    cases: list[tuple[str, str, Headers, bytes]] = [
        ("POST", "/api/v1/projects/p/jobs/complete", rid("2"), json.dumps(complete).encode()),
        ("POST", "/api/v1/projects/p/jobs/complete", rid("3"), json.dumps(complete).encode()),
        ("POST", "/api/v1/projects/p/jobs/fail", rid("4"), json.dumps(fail).encode()),
        ("POST", "/api/v1/projects/p/jobs/extend-lease", rid("5"), json.dumps(extend).encode()),
        ("POST", "/api/v1/projects/p/jobs/complete", rid("6"), json.dumps(big).encode()),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("7"), b"{not json"),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("8"), claim() + b" {}"),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("9"), b"null"),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("10"), claim(0)),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("11"), claim(100_000)),
        ("POST", "/api/v1/projects/p/jobs/claim", WORKER_HEADERS[:1] + WORKER_HEADERS[2:], claim()),
        ("POST", "/api/v1/projects/p/jobs/claim",
         [(b"authorization", b"Bearer nope"), *WORKER_HEADERS[2:]], claim()),
        ("POST", "/api/v1/projects/p/jobs/claim", WORKER_HEADERS[:2] + WORKER_HEADERS[3:], claim()),
        ("POST", "/api/v1/projects/p/jobs/claim", WORKER_HEADERS[:3], claim()),
        ("POST", "/api/v1/projects/nope/jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/bad%20id/jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/bad id/jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/q/jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/q/jobs/complete", WORKER_HEADERS,
         json.dumps({"worker_id": "w1", "items": [{"job_id": "", "attempt_id": ""}]}).encode()),
        ("POST", "/api/v1/projects/p/jobs/complete", WORKER_HEADERS,
         json.dumps({"worker_id": "w1", "items": [{"job_id": 1}]}).encode()),
        ("POST", "/api/v1/projects/p/jobs/nope", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects//jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/p/x/jobs/claim", WORKER_HEADERS, claim()),
        ("POST", "/api/v1/projects/p/jobs/claim/", WORKER_HEADERS, claim()),
        ("POST", "/api//v1/projects/p/jobs/claim", WORKER_HEADERS, claim()),
        ("GET", "/api/v1/projects/p/jobs/claim", WORKER_HEADERS, b""),
        ("POST", "/api/v1/projects/p/jobs/claim", [(b"host", b"bad host"), *WORKER_HEADERS[1:]],
         claim()),
        ("POST", "/api/v1/projects/p/jobs/claim", rid("12"), claim(3)),
    ]  # fmt: skip
    statuses = set()
    for method, path, headers, body in cases:
        statuses.add((await pair.both(method, path, headers, body))[0]["status"])
    assert statuses >= {200, 400, 401, 404, 405, 409, 426}
    assert pair.served >= 20
    lines = [r.__dict__["fields"] for r in caplog.records if r.name == "hq.api.request"]
    for mine, theirs in zip(lines[0::2], lines[1::2], strict=True):
        assert {**mine, "latency_ms": 0} == {**theirs, "latency_ms": 0}
    assert routes.seen[0::2] == routes.seen[1::2]
    assert ("POST", "/api/v1/projects/{project_id}/jobs/claim", 200) in routes.seen


async def test_dispatch_limit_429_carries_the_same_retry_after(counter: Counter) -> None:
    pair = Pair(counter)
    await pair.setup(dispatch_qps=0.001)
    first = await pair.both("POST", "/api/v1/projects/p/jobs/claim", rid("a"), claim(1))
    assert first[0]["status"] == 200
    limited = await pair.both("POST", "/api/v1/projects/p/jobs/claim", rid("b"), claim(1))
    assert limited[0]["status"] == 429
    assert limited[0]["headers"][0][0] == b"retry-after"
    assert pair.served == 2


async def test_a_failure_the_store_did_not_expect_is_a_500_both_ways(counter: Counter) -> None:
    pair = Pair(counter)
    await pair.setup()

    async def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom")

    for store in pair.stores:
        store.gated_claim = broken  # type: ignore[method-assign]
    out = await pair.both("POST", "/api/v1/projects/p/jobs/claim", rid("c"), claim())
    assert out[0]["status"] == 500
    assert body_of(out)["error"]["code"] == "internal_error"
    assert b"boom" not in out[1]["body"]


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "worker_id": st.sampled_from(["w1", "", "bad id", 7]) | _values,
        "max_jobs": st.integers(-2, 300) | _values,
        "lease_seconds": st.integers(-2, 4000) | _values,
        "policy_version": st.integers(0, 3),
        "accept_types": st.lists(st.sampled_from(["seed", "", "x y"]), max_size=3) | _values,
        "extend_seconds": st.integers(-2, 4000),
        "items": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "job_id": st.sampled_from(["j1_x", "", "bad id"]) | _values,
                    "attempt_id": st.sampled_from(["at_x", ""]) | _values,
                    "outcome": _values,
                    "retryable": _values,
                    "error": _values,
                },
            ),
            max_size=3,
        )
        | _values,
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    op=st.sampled_from(["claim", "complete", "fail", "extend-lease"]),
    doc=_fields,
    raw=st.none() | st.binary(max_size=20),
)
async def test_any_body_answers_the_same_both_ways(
    counter: Counter, op: str, doc: dict[str, Any], raw: bytes | None
) -> None:
    pair = Pair(counter)
    await pair.setup()
    body = raw if raw is not None else json.dumps(doc).encode()
    await pair.both("POST", f"/api/v1/projects/p/jobs/{op}", rid("h"), body)
    assert pair.served == 1
