"""Property-based API testing with schemathesis against the OpenAPI document the app serves
(issue "Reliability and security"): for every documented operation, generated requests sent
with a valid admin token (admin routes) or a valid worker token and allowed client version
(worker routes) never get a 5xx, and every response conforms to the documented schema.

The schema is loaded from the running ASGI app (``/schema/openapi.json``), so the test follows
the handlers' ``op(...)`` metadata. Each operation gets its own freshly seeded app (the seed of
the authorisation matrix, ``tests.security.matrix``), so a generated ``DELETE`` on one
operation cannot starve the others of data.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.fuzz.schemathesis_support import (
    CONFIG,
    auth_headers,
    build_app,
    documented_successes,
    seeded_path_values,
)
from tests.fuzz.support import EXAMPLES

SCHEMA_PATH = "/schema/openapi.json"


def no_store_on_api(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Spec §1.1: every ``/api/`` response, errors included, carries ``Cache-Control: no-store``
    (the official clients refuse it otherwise). The schema declares the no-store set on each
    documented response, which ``response_headers_conformance`` validates; this check also
    covers responses whose status the schema does not document."""
    if case.formatted_path.startswith("/api/"):
        values = response.headers.get("cache-control", [])
        assert any("no-store" in v.lower() for v in values), (case.method, response.headers)


CHECKS = [
    no_store_on_api, not_a_server_error, status_code_conformance, content_type_conformance,
    response_schema_conformance, response_headers_conformance, negative_data_rejection,
    missing_required_header, unsupported_method, ignored_auth,
]  # fmt: skip
"""``status_code_conformance`` and ``response_headers_conformance`` are meaningful: every
operation declares its error statuses (no ``default``) and its response headers.
``positive_data_acceptance`` is left out on purpose: the served request body schemas are the
wire decoders' (every field optional and nullable, no enums or ranges), so schema-valid data
is routinely and correctly rejected with 400."""

schema = schemathesis.openapi.from_asgi(SCHEMA_PATH, build_app(), config=CONFIG)


@schema.hook
def before_generate_path_parameters(context: schemathesis.HookContext, strategy: Any) -> Any:
    """Mix the ids the seed created into the generated ones (so handlers get past their 404s)."""
    return seeded_path_values(context.operation, strategy)


@pytest.fixture
def app() -> Any:
    return build_app()


def _exercise(case: schemathesis.Case, app: Any) -> None:
    case.call_and_validate(headers=auth_headers(case.operation.path), checks=CHECKS, app=app)


COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                              HealthCheck.filter_too_much],
}  # fmt: skip


@schema.parametrize()
@settings(max_examples=EXAMPLES, **COMMON)  # type: ignore[arg-type]
def test_api_conforms(case: schemathesis.Case, app: Any) -> None:
    _exercise(case, app)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES * 25, **COMMON)  # type: ignore[arg-type]
def test_api_conforms_thoroughly(case: schemathesis.Case, app: Any) -> None:
    _exercise(case, app)


SUCCESSES = documented_successes(schema)


def test_every_operation_has_a_success_case() -> None:
    """Generated bodies almost never pass the handlers' validation (the request schemas do not
    carry the spec's constraints), so the success responses are checked from known-good
    requests instead; every documented operation but ``/readyz`` must have one."""
    labels = {label for label, *_ in SUCCESSES}
    every = {result.ok().label for result in schema.get_all_operations()}
    assert every - labels == {"GET /readyz"}


@pytest.mark.parametrize(("label", "operation", "route", "path"), SUCCESSES,
                         ids=[label for label, *_ in SUCCESSES])  # fmt: skip
def test_success_responses_conform(
    label: str, operation: Any, route: Any, path: dict[str, str], app: Any
) -> None:
    body = {} if route.body is None else {"body": route.body, "media_type": route.content_type}
    case = operation.Case(path_parameters=path, **body)
    response = case.call_and_validate(headers=auth_headers(operation.path), checks=CHECKS, app=app)
    assert response.status_code == route.ok, (label, response.status_code, response.text[:300])
