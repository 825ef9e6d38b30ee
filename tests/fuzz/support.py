"""Shared pieces of the fuzz suite: an app on the memory store, per-route valid bodies, JSON
strategies that mutate them, and the response invariants every rejection must satisfy."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from hypothesis import strategies as st
from litestar.testing import TestClient

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from hq_domain.jobs import JobSpec
from hq_domain.projects import ProjectPut
from hq_domain.users import Role

ADMIN_TOKEN, WORKER_TOKEN, VERSION = "fuzz-admin-token", "fuzz-worker-token", "fz/1"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WORKER = {"Authorization": f"Bearer {WORKER_TOKEN}", "X-SavewebHQ-Client-Version": VERSION}
ENVELOPE_KEYS = {"code", "message", "retryable", "retry_after_ms", "details"}
SPEC_CODES = {
    "invalid_request", "invalid_job", "invalid_machine_token", "permission_denied", "not_found",
    "client_upgrade_required", "project_dispatch_rate_limited", "identity_conflict",
    "project_not_active",
}  # fmt: skip
EXAMPLES = int(os.environ.get("HQ_FUZZ_EXAMPLES", "25"))
"""Examples per route in the default run; the ``slow`` variants use 25× as many."""


@dataclass
class Fuzzed:
    client: TestClient[Any]
    store: MemoryStore
    clock: ManualClock


async def _seed(store: MemoryStore) -> None:
    await store.bootstrap_user("admin", [Role.ADMIN], ADMIN_TOKEN)
    await store.bootstrap_user("worker", [Role.WORKER], WORKER_TOKEN)
    await store.put_project("fz", ProjectPut(status="active", client_versions=(VERSION,)))
    await store.put_project("fz-put", ProjectPut(status="active"))
    await store.enqueue("fz", [JobSpec(f"v{i}", id=f"j{i}") for i in range(50)])


@contextmanager
def fuzzed_app() -> Iterator[Fuzzed]:
    import asyncio

    clock = ManualClock()
    store = MemoryStore(clock)
    asyncio.run(_seed(store))
    app = create_app(Settings(sweep_interval_s=0, openapi=False), store, clock)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Fuzzed(client, store, clock)


def snapshot(store: MemoryStore) -> dict[str, Any]:
    """Every table of the memory store, as comparable plain values (derived indexes such as
    the todo queues and lease heap are left out: they follow from the rows)."""
    state = store.state
    tables = {
        name: getattr(state, name)
        for name in ("users", "tokens", "token_owner", "sessions", "projects", "job_project",
                     "claim_buckets", "workers", "last_job_id")
    }  # fmt: skip
    tables["jobs"] = {
        pid: (pj.jobs, pj.by_status, pj.identities) for pid, pj in state.project_jobs.items()
    }
    return copy.deepcopy(tables)


def check_response(r: httpx.Response) -> None:
    """Never a 5xx; every error is the spec's JSON envelope with exactly the five keys."""
    assert r.status_code < 500, (r.status_code, r.text[:500])
    if r.status_code >= 400:
        assert r.headers["content-type"] == "application/json", r.headers
        assert "no-store" in r.headers.get("cache-control", ""), r.headers
        body = r.json()
        assert list(body) == ["error"] and set(body["error"]) == ENVELOPE_KEYS, body
        assert body["error"]["code"] in SPEC_CODES, body


# --- routes and their valid bodies ----------------------------------------------------------

ITEM = {"job_id": 1, "attempt_id": "at_fuzz"}
RECEIPT = {"id": "r", "issuer": "i", "object_id": "o", "checksum": "md5:" + "0" * 32,
           "size_bytes": 1, "accepted_at": 1}  # fmt: skip
ROUTES: dict[str, tuple[str, str, dict[str, str], dict[str, Any]]] = {
    "put_project": ("PUT", "/api/v1/admin/projects/fz-put", ADMIN, {
        "status": "active", "identity_mode": "external_id", "claim_order": "fifo",
        "dispatch_qps": None, "worker_claim_qps": 1.5, "max_jobs_per_claim": 10,
        "max_resets": 3, "recommended_lease_seconds": 300, "client_versions": ["a", "b"]}),
    "enqueue": ("POST", "/api/v1/admin/projects/fz/jobs", ADMIN, {"jobs": [
        {"id": "x1", "value": "https://e/1", "type": "seed", "via": "v", "hops": 1,
         "attr": {"k": [1, 2]}, "random_key": 7}]}),
    "put_user": ("PUT", "/api/v1/admin/users/fuzz-user", ADMIN,
                 {"status": "active", "roles": ["worker"]}),
    "claim": ("POST", "/api/v1/projects/fz/jobs/claim", WORKER, {
        "worker_id": "w", "max_jobs": 1, "lease_seconds": 30, "accept_types": ["seed"],
        "policy_version": 1}),
    "complete": ("POST", "/api/v1/projects/fz/jobs/complete", WORKER, {
        "worker_id": "w", "items": [{**ITEM, "outcome": {"kind": "success", "code": 200,
        "uri": "u", "meta": {"m": 1}}, "artifact_receipts": [RECEIPT]}]}),
    "fail": ("POST", "/api/v1/projects/fz/jobs/fail", WORKER, {
        "worker_id": "w", "items": [{**ITEM, "retryable": True,
        "error": {"code": "e", "message": "m", "details": {"d": 1}}}]}),
    "extend": ("POST", "/api/v1/projects/fz/jobs/extend-lease", WORKER,
               {"worker_id": "w", "extend_seconds": 30, "items": [ITEM]}),
}  # fmt: skip


# --- strategies --------------------------------------------------------------------------------

KEYS = st.sampled_from(
    ["status", "jobs", "items", "value", "id", "Value", "ID", "worker_id", "max_jobs", "attr",
     "outcome", "error", "roles", "unknown", "__proto__", "job_id", "attempt_id", ""]
) | st.text(max_size=8)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, -1, 1, 255, 256, 257, 3600, 3601, 2**31, -(2**31) - 1, 2**63, 2**64])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["", " ", "seed", "asset", "success", "active", "x" * 9000, "\u2028<&>"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=10,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _set(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` with one to three edits: replace a node, drop a key, add or re-case a key."""
    doc: Any = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        kind = draw(st.sampled_from(["replace", "drop", "add", "case"]))
        node = doc
        for key in path:
            node = node[key]
        if kind == "replace" or not isinstance(node, dict) or not node:
            doc = _set(doc, path, draw(JSON))
        elif kind == "drop":
            node.pop(draw(st.sampled_from(sorted(node))))
        elif kind == "add":
            node[draw(KEYS)] = draw(JSON)
        else:
            key = draw(st.sampled_from(sorted(node)))
            node[key.upper()] = node.pop(key)
    return doc


def _text_tricks(text: str) -> list[bytes]:
    raw = text.encode()
    return [
        raw.replace(b'"', b'"\xff', 1),  # invalid UTF-8 inside the first string
        raw.replace(b"1", b"NaN", 1),
        raw.replace(b"1", b"Infinity", 1),
        raw.replace(b"1", b"-Infinity", 1),
        raw.replace(b"1", b"1e400", 1),
        raw.replace(b"1", b"123456789012345678901234567890", 1),
        raw.replace(b"1", b"1.0", 1),
        raw + b" x",
        raw + raw,
        b"\xef\xbb\xbf" + raw,  # BOM
        raw[: len(raw) // 2],
    ]


@st.composite
def raw_bodies(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """Byte-level abuse of a valid body: bad UTF-8, NaN/Infinity literals, duplicate keys,
    deep nesting, truncation, trailing data."""
    text = json.dumps(base, separators=(",", ":"))
    first_key = next(iter(base))
    depth = draw(st.sampled_from([64, 1000, 100_000]))
    choices = [
        *_text_tricks(text),
        text.replace("{", f'{{"{first_key}":"dup",', 1).encode(),  # duplicate key, first
        (text[:-1] + f',"{first_key}":{{"a":1}}}}').encode(),  # duplicate key, last
        text.replace("1", "[" * depth + "]" * depth, 1).encode(),
        (f'{{"{first_key}":' + "[" * depth + "]" * depth + "}").encode(),
        ("{" + '"a":{' * depth + "}" * depth + "}").encode(),
        b"", b"null", b"[]", b"0", b'"s"', b"{", b"\x00", b"\xff\xfe",
    ]  # fmt: skip
    return draw(st.sampled_from(choices))
