"""One nesting-depth rule for every JSON entry point (issue 13 #3): up to MAX_JSON_DEPTH is
accepted, deeper is the spec's 400 envelope naming the field, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hq_adapters.sourcefile.lines import parse_job_line
from hq_apps.web.forms import FormError, job_batch
from hq_domain.errors import InvalidJob
from hq_domain.validation import MAX_JSON_DEPTH, json_depth
from tests.fuzz.support import ROUTES, Fuzzed, check_response, fuzzed_app

DEPTHS = [MAX_JSON_DEPTH + 1, 990, 5_000, 10_000, 100_000]


def deep(depth: int, kind: str = "object") -> str:
    """A JSON object whose nesting depth is ``depth`` (objects or, inside one object, lists)."""
    if kind == "object":
        return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)
    return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.fixture(scope="module")
def fz() -> Iterator[Fuzzed]:
    with fuzzed_app() as f:
        yield f


def _body(route: str, value: str) -> bytes:
    _, _, _, valid = ROUTES[route]
    text = json.dumps(valid)
    marker = {"enqueue": '{"k": [1, 2]}', "complete": '{"m": 1}', "fail": '{"d": 1}'}[route]
    assert marker in text
    return text.replace(marker, value).encode()


def _post(fz: Fuzzed, route: str, value: str) -> Any:
    method, path, headers, _ = ROUTES[route]
    r = fz.client.request(method, path, content=_body(route, value),
                          headers={**headers, "Content-Type": "application/json"})  # fmt: skip
    check_response(r)
    return r


def test_depth_is_measured_without_recursion() -> None:
    assert json_depth(json.loads(deep(5))) == 5
    assert json_depth({"a": [1, {"b": []}]}) == 4
    assert json_depth(1) == 0
    very = current = []  # type: ignore[var-annotated]
    for _ in range(200_000):
        current.append([])
        current = current[0]
    assert json_depth(very) == MAX_JSON_DEPTH + 1  # stops counting past the limit


@pytest.mark.parametrize("route", ["enqueue", "complete", "fail"])
@pytest.mark.parametrize("kind", ["object", "list"])
def test_deep_values_are_400_on_every_route(fz: Fuzzed, route: str, kind: str) -> None:
    for depth in DEPTHS:
        r = _post(fz, route, deep(depth, kind))
        assert r.status_code == 400, (depth, r.text)
        assert f"nested deeper than {MAX_JSON_DEPTH} levels" in r.json()["error"]["message"]


def test_values_at_the_limit_are_accepted(fz: Fuzzed) -> None:
    r = _post(fz, "enqueue", deep(MAX_JSON_DEPTH))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("depth", DEPTHS)
def test_source_lines_and_dashboard_batches(depth: int) -> None:
    line = '{"value":"https://e/1","attr":' + deep(depth) + "}"
    with pytest.raises(InvalidJob, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        parse_job_line(line.encode())
    with pytest.raises(FormError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        job_batch("[" + line + "]")
    ok = '{"value":"https://e/1","attr":' + deep(MAX_JSON_DEPTH) + "}"
    assert parse_job_line(ok.encode()).attr is not None
