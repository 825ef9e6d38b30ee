"""httpx transports: one pooled client per queue, the same checks for sync and async.

Redirects are not followed. Bodies are read through an 8 MiB cap before any parsing.
"""

from __future__ import annotations

import httpx

from hq_adapters.client.config import Config, Endpoint
from hq_adapters.client.errors import NetworkError, TransportError
from hq_adapters.client.flows import Call
from hq_adapters.client.wire import (
    JSON_CONTENT_TYPE,
    MAX_RESPONSE_BYTES,
    base_headers,
    decode_response,
)


def _declared_too_big(response: httpx.Response) -> bool:
    length = response.headers.get("content-length")
    return length is not None and length.isdigit() and int(length) > MAX_RESPONSE_BYTES


def _too_big() -> TransportError:
    return TransportError("HTTP response exceeds size limit")


def _network_error(error: Exception) -> NetworkError:
    return NetworkError(f"HTTP request failed: {error}")


class SyncTransport:
    def __init__(
        self, config: Config, endpoint: Endpoint, transport: httpx.BaseTransport | None = None
    ) -> None:
        self._endpoint = endpoint
        self._timeout = config.request_timeout
        self._client = httpx.Client(
            headers=base_headers(config),
            timeout=config.request_timeout,
            follow_redirects=False,
            transport=transport,
        )

    def call(self, call: Call) -> dict:
        try:
            with self._client.stream(
                call.method,
                self._endpoint.url(call.path),
                content=call.body,
                headers=JSON_CONTENT_TYPE if call.body is not None else None,
                timeout=call.timeout if call.timeout is not None else self._timeout,
            ) as response:
                if _declared_too_big(response):
                    raise _too_big()
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise _too_big()
        except httpx.TransportError as error:
            raise _network_error(error) from error
        except httpx.StreamError as error:
            raise TransportError(f"HTTP request failed: {error}") from error
        return decode_response(response.status_code, response.headers.get("cache-control"), body)

    def close(self) -> None:
        self._client.close()


class AsyncTransport:
    def __init__(
        self,
        config: Config,
        endpoint: Endpoint,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._timeout = config.request_timeout
        self._client = httpx.AsyncClient(
            headers=base_headers(config),
            timeout=config.request_timeout,
            follow_redirects=False,
            transport=transport,
        )

    async def call(self, call: Call) -> dict:
        try:
            async with self._client.stream(
                call.method,
                self._endpoint.url(call.path),
                content=call.body,
                headers=JSON_CONTENT_TYPE if call.body is not None else None,
                timeout=call.timeout if call.timeout is not None else self._timeout,
            ) as response:
                if _declared_too_big(response):
                    raise _too_big()
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise _too_big()
        except httpx.TransportError as error:
            raise _network_error(error) from error
        except httpx.StreamError as error:
            raise TransportError(f"HTTP request failed: {error}") from error
        return decode_response(response.status_code, response.headers.get("cache-control"), body)

    async def aclose(self) -> None:
        await self._client.aclose()
