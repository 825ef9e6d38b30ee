"""The app and request shaping behind ``test_schemathesis``: the authorisation matrix's seed on
the memory store with OpenAPI enabled, the credentials each route family needs, and seeded ids
mixed into the generated path parameters."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import schemathesis
from hypothesis import strategies as st

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings
from hq_domain.clock import ManualClock
from tests.security.matrix import ROUTES, TOKENS, VERSION, Route, seed

ADMIN = {"Authorization": f"Bearer {TOKENS['admin']}"}
WORKER = {"Authorization": f"Bearer {TOKENS['worker']}", "X-SavewebHQ-Client-Version": VERSION}
SEEDED = {
    # "admin" is left out of user ids: deleting it would turn the rest of the run into 401s.
    "project_id": ["p", "gone", "missing"],
    "job_id": ["1", "2", "3", "99"],
    "user_id": ["victim", "doomed", "worker", "pending", "fresh"],
}

CONFIG = schemathesis.Config.from_dict({
    "checks": {
        "negative_data_rejection": {
            # Spec §1.6: on worker routes the client-version gate (426) runs before the body is
            # decoded, so a schema-violating body sent to a project that blocks the version is
            # answered 426 — correctly.
            "expected-statuses": [400, 401, 403, 404, 405, 409, 413, 415, 426, 429],
        },
        # Spec §1.6: a missing client version is treated as "" and never matches (426).
        "missing_required_header": {"expected-statuses": [426]},
    },
    # Worker routes answer 404 for an unknown project before looking at the body (§1.6), so
    # their project is pinned to the seeded one: every phase (the coverage phase ignores
    # generation hooks) then exercises the body decoding and the operation itself.
    "operations": [
        {"include-path-regex": "^/api/v1/projects/", "parameters": {"path.project_id": "p"}},
        # Route 9 ignores unknown query parameters (as the reference's router does), so an
        # extra one is not negative data. It has no body whose unknown keys would go unchecked.
        {"include-name": "GET /api/v1/admin/projects/{project_id}/jobs",
         "generation": {"allow-extra-parameters": False}},
    ],
})  # fmt: skip


@schemathesis.serializer("application/zstd")
def _zstd_bytes(ctx: schemathesis.SerializationContext, value: bytes) -> bytes:
    """Route 8's body (declared as binary) goes out as the raw bytes generated."""
    return value


def build_app() -> Any:
    """A freshly seeded app with the OpenAPI document served at ``/schema``."""
    clock = ManualClock(1_700_000_000 * 10**9)
    store = MemoryStore(clock)
    asyncio.run(seed(store))
    return create_app(Settings(sweep_interval_s=0, openapi=True), store, clock)


def auth_headers(path: str) -> dict[str, str]:
    """Admin credentials for admin routes, worker credentials (and an allowed client version)
    for everything else; routes without auth ignore them."""
    return ADMIN if path.startswith("/api/v1/admin/") else WORKER


def seeded_path_values(operation: Any, strategy: Any) -> Any:
    names = re.findall(r"{(\w+)}", operation.path)
    if not names or any(name not in SEEDED for name in names):
        return strategy
    seeded = st.fixed_dictionaries({name: st.sampled_from(SEEDED[name]) for name in names})
    return st.one_of(seeded, strategy)


def documented_successes(schema: Any) -> list[tuple[str, Any, Route, dict[str, str]]]:
    """Each authorisation-matrix route that succeeds for its caller, paired with the schema
    operation it belongs to and the path parameters it uses."""
    found = []
    for result in schema.get_all_operations():
        operation = result.ok()
        template = re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", operation.path)
        for route in ROUTES:
            match = re.fullmatch(template, route.path)
            if match and route.method == operation.method.upper():
                found.append((operation.label, operation, route, match.groupdict()))
    return found
