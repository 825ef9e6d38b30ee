"""Hypothesis-generated bodies for every JSON route, through the real ASGI app on the memory
store: only spec errors (4xx envelope with the five keys), never a 5xx, and a rejected request
leaves the state exactly as it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.support import (
    EXAMPLES,
    JSON,
    ROUTES,
    Fuzzed,
    check_response,
    fuzzed_app,
    mutated,
    raw_bodies,
    snapshot,
)

FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=False,
)
SLOW = settings(FAST, max_examples=EXAMPLES * 25)


@pytest.fixture(scope="module")
def fz() -> Iterator[Fuzzed]:
    with fuzzed_app() as f:
        yield f


def _send(fz: Fuzzed, route: str, content: bytes, content_type: str = "application/json") -> None:
    method, path, headers, _ = ROUTES[route]
    before = snapshot(fz.store)
    r = fz.client.request(
        method, path, content=content, headers={**headers, "Content-Type": content_type}
    )
    check_response(r)
    if r.status_code >= 400:
        assert snapshot(fz.store) == before, f"{route} changed state on {r.status_code}: {r.text}"


def _json(doc: Any) -> bytes:
    import json

    return json.dumps(doc, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")


ROUTE_NAMES = sorted(ROUTES)


@pytest.mark.parametrize("route", ROUTE_NAMES)
def test_the_valid_body_is_accepted(fz: Fuzzed, route: str) -> None:
    """Guard against a fuzz suite that only ever sees rejections for a broken base body."""
    method, path, headers, body = ROUTES[route]
    r = fz.client.request(method, path, json=body, headers=headers)
    assert r.status_code in (200, 204), r.text


@pytest.mark.parametrize("route", ROUTE_NAMES)
@FAST
@given(data=st.data())
def test_mutated_bodies(fz: Fuzzed, route: str, data: st.DataObject) -> None:
    _send(fz, route, _json(data.draw(mutated(ROUTES[route][3]))))


@pytest.mark.parametrize("route", ROUTE_NAMES)
@FAST
@given(doc=JSON)
def test_arbitrary_json(fz: Fuzzed, route: str, doc: Any) -> None:
    _send(fz, route, _json(doc))


@pytest.mark.parametrize("route", ROUTE_NAMES)
@FAST
@given(data=st.data())
def test_raw_byte_abuse(fz: Fuzzed, route: str, data: st.DataObject) -> None:
    _send(fz, route, data.draw(raw_bodies(ROUTES[route][3])))


@pytest.mark.parametrize("route", ROUTE_NAMES)
@FAST
@given(ctype=st.sampled_from(["", "text/plain", "application/json; charset=latin-1",
                              "application/jsonx", "application/json;;", "multipart/form-data",
                              "APPLICATION/JSON", "application/json ; x=1", "*/*"]))  # fmt: skip
def test_content_types(fz: Fuzzed, route: str, ctype: str) -> None:
    _send(fz, route, _json(ROUTES[route][3]), ctype)


@given(
    project=st.text(max_size=140) | st.sampled_from(["..", "%2F", "a/b", "x" * 129, " ", "é"]),
    job=st.text(max_size=30) | st.integers().map(str),
    query=st.dictionaries(
        st.sampled_from(["status", "after_job_id", "limit", "x"]),
        st.text(max_size=12) | st.integers(-(2**70), 2**70).map(str),
        max_size=3,
    ),
)
@FAST
def test_path_and_query_parameters(
    fz: Fuzzed, project: str, job: str, query: dict[str, str]
) -> None:
    from urllib.parse import quote

    p, j = quote(project, safe=""), quote(job, safe="")
    before = snapshot(fz.store)
    for method, path, headers in [
        ("GET", f"/api/v1/admin/projects/{p}", ROUTES["enqueue"][2]),
        ("GET", f"/api/v1/admin/projects/{p}/jobs", ROUTES["enqueue"][2]),
        ("GET", f"/api/v1/admin/projects/fz/jobs/{j}", ROUTES["enqueue"][2]),
        ("GET", f"/api/v1/admin/users/{p}/machine-token", ROUTES["enqueue"][2]),
        ("GET", f"/api/v1/projects/{p}", ROUTES["claim"][2]),
    ]:
        r = fz.client.request(method, path, params=query, headers=headers)
        check_response(r)
    assert snapshot(fz.store) == before  # reads never write


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTE_NAMES)
@SLOW
@given(data=st.data())
def test_mutated_bodies_long(fz: Fuzzed, route: str, data: st.DataObject) -> None:
    _send(fz, route, _json(data.draw(mutated(ROUTES[route][3]))))


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTE_NAMES)
@SLOW
@given(doc=JSON)
def test_arbitrary_json_long(fz: Fuzzed, route: str, doc: Any) -> None:
    _send(fz, route, _json(doc))
