"""Request encoding and response checks shared by the sync and async transports (spec §6.3).

Pure functions over bytes and header values; the transports only move bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import msgspec

from hq_adapters.client.config import Config
from hq_adapters.client.errors import ProtocolError, TransportError, api_error

MAX_RESPONSE_BYTES = 8 << 20  # 8 MiB, as the reference SDK
MAX_BATCH_ITEMS = 256

# Compact UTF-8 JSON; NaN/Infinity are rejected (they are not JSON), as the reference does.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# msgspec's decoder rejects NaN/Infinity literals and trailing data, and is fast on big claims.
_DECODER = msgspec.json.Decoder()

WHOAMI_PATH = "/api/v1/whoami"


def base_headers(config: Config) -> dict[str, str]:
    """Headers sent on every request, whoami included."""
    return {
        "Authorization": f"Bearer {config.machine_token}",
        "X-SavewebHQ-Client-Version": config.client_version,
        "Accept": "application/json",
        "Cache-Control": "no-store",
    }


JSON_CONTENT_TYPE = {"Content-Type": "application/json"}


def encode(payload: Any) -> bytes:
    return _ENCODER.encode(payload).encode("utf-8")


def policy_path(project_id: str) -> str:
    return f"/api/v1/projects/{quote(project_id, safe='')}"


def jobs_path(project_id: str, operation: str) -> str:
    return f"/api/v1/projects/{quote(project_id, safe='')}/jobs/{operation}"


def decode_response(status: int, cache_control: str | None, body: bytes) -> dict[str, Any]:
    """Validate one response and return its JSON object, or raise.

    Order as in the reference SDK: size, ``Cache-Control: no-store`` (error responses too),
    JSON object, then the status: non-2xx with an ``error`` object → ``APIError``.
    """
    if len(body) > MAX_RESPONSE_BYTES:
        raise TransportError("HTTP response exceeds size limit")
    if "no-store" not in (cache_control or "").lower():
        raise TransportError("HQ response is cacheable")
    try:
        decoded = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as error:
        raise TransportError(f"invalid JSON response: {error}") from error
    if not isinstance(decoded, dict):
        raise TransportError("JSON response must be an object")
    if not 200 <= status < 300:
        error = decoded.get("error")
        if not isinstance(error, dict):
            raise TransportError(f"HTTP {status} has no error envelope")
        raise api_error(status, error)
    return decoded


def user_id_of(response: Mapping[str, Any]) -> str:
    user_id = response.get("user_id")
    if not isinstance(user_id, str) or not user_id:
        raise ProtocolError("tracker returned an empty user ID")
    return user_id


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def item_results(response: Mapping[str, Any], sent: int) -> list[dict[str, Any]]:
    """The ``results`` of a complete/fail/extend batch: one per sent item, in order."""
    results = response.get("results")
    if not isinstance(results, list) or len(results) != sent:
        raise ProtocolError("tracker returned a mismatched batch response")
    for result in results:
        if not isinstance(result, dict) or result.get("status") not in ("applied", "rejected"):
            raise ProtocolError("tracker returned an invalid item result")
    return results


def chunks(items: list[Any], size: int = MAX_BATCH_ITEMS) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
