"""A synchronous httpx client for the admin API, validating responses like the official
Go client (spec §6.1): ``Cache-Control`` must contain ``no-store``, the media type must be
``application/json``, bodies are capped at 8 MiB and decoded as exactly one JSON value with
unknown keys rejected. Non-2xx responses become :class:`ApiError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote, urlsplit

import httpx
import msgspec

from hq_adapters.admin_client import wire
from hq_domain.jobs import JobSpec

T = TypeVar("T")
MAX_RESPONSE_BYTES = 8 << 20
MAX_TOKEN_CHARS = 1024


class ClientError(Exception):
    """Transport failure or a response that breaks the protocol."""


class ApiError(ClientError):
    """A well-formed error envelope."""

    def __init__(self, status: int, body: wire.APIErrorBody) -> None:
        super().__init__(f"HTTP {status} {body.code}: {body.message}")
        self.status = status
        self.code = body.code
        self.message = body.message
        self.body = body


def validate_base_url(url: str, *, allow_http: bool) -> str:
    """``https`` (or ``http`` when allowed) with a host, no userinfo/query/fragment, path
    empty or ``/``; returns the URL without a trailing slash."""
    parts = urlsplit(url)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        raise ClientError("tracker URL must use https" + (" or http" if allow_http else ""))
    if (
        not parts.hostname
        or parts.username is not None
        or parts.password is not None
        or parts.query
        or parts.fragment
        or "?" in url
        or "#" in url
        or parts.path not in ("", "/")
    ):
        raise ClientError("tracker URL must be an origin without userinfo, path, query or fragment")
    return url.rstrip("/")


def _seg(value: str | int) -> str:
    return quote(str(value), safe="")


def job_body(spec: JobSpec) -> dict[str, Any]:
    """An enqueue item (``random_key`` included when explicit), empties omitted."""
    out: dict[str, Any] = {}
    if spec.id:
        out["id"] = spec.id
    out["value"] = spec.value
    if spec.type:
        out["type"] = spec.type
    if spec.via is not None:
        out["via"] = spec.via
    if spec.hops:
        out["hops"] = spec.hops
    if spec.attr:
        out["attr"] = spec.attr
    if spec.random_key is not None:
        out["random_key"] = spec.random_key
    return out


class AdminClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        allow_http: bool = False,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not 1 <= len(token) <= MAX_TOKEN_CHARS:
            raise ClientError("machine token must be 1-1024 characters")
        self.base_url = validate_base_url(base_url, allow_http=allow_http)
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            transport=transport,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "Cache-Control": "no-store, no-cache, max-age=0",
            },
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        kind: type[T] | None,
        *,
        expect: int,
        params: dict[str, Any] | None = None,
        json_body: bytes | None = None,
        content: BinaryIO | Iterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> T | None:
        hdrs = dict(headers or {})
        body: Any = content
        if json_body is not None:
            hdrs["Content-Type"] = "application/json"
            body = json_body
        try:
            with self._http.stream(
                method, self.base_url + path, params=params, content=body, headers=hdrs
            ) as resp:
                raw = self._read_capped(resp)
        except httpx.ConnectError as exc:
            raise ClientError(
                f"cannot connect to the tracker at {self.base_url} ({exc}); is it running "
                "and is the URL right (--url or HQ_URL)?"
            ) from None
        except httpx.TimeoutException as exc:
            raise ClientError(
                f"{method} {path}: no answer from {self.base_url} in time ({exc or 'timeout'})"
            ) from None
        except httpx.HTTPError as exc:
            raise ClientError(f"{method} {path}: {exc}") from None
        return self._decode(resp, raw, kind, expect)

    @staticmethod
    def _read_capped(resp: httpx.Response) -> bytes:
        buf = bytearray()
        for chunk in resp.iter_bytes():
            buf += chunk
            if len(buf) > MAX_RESPONSE_BYTES:
                raise ClientError(f"response body exceeds {MAX_RESPONSE_BYTES} bytes")
        return bytes(buf)

    @staticmethod
    def _decode(resp: httpx.Response, raw: bytes, kind: type[T] | None, expect: int) -> T | None:
        if "no-store" not in resp.headers.get("cache-control", "").lower():
            raise ClientError(
                f"HTTP {resp.status_code}: response is missing Cache-Control no-store"
            )
        if resp.status_code == expect and kind is None:
            return None
        essence = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if essence != "application/json":
            raise ClientError(f"HTTP {resp.status_code}: response is not application/json")
        if resp.status_code != expect:
            if 200 <= resp.status_code < 300:
                raise ClientError(f"unexpected HTTP status {resp.status_code}")
            try:
                env = msgspec.json.decode(raw, type=wire.ErrorEnvelope)
            except (msgspec.MsgspecError, RecursionError) as exc:
                raise ClientError(
                    f"HTTP {resp.status_code}: invalid error response: {exc}"
                ) from None
            raise ApiError(resp.status_code, env.error)
        try:
            return msgspec.json.decode(raw, type=kind)  # type: ignore[arg-type]
        except msgspec.MsgspecError as exc:
            raise ClientError(f"invalid response: {exc}") from None
        except RecursionError:
            raise ClientError("invalid response: JSON nested too deeply to decode") from None

    # -- routes ----------------------------------------------------------------------------

    def whoami(self) -> wire.Whoami:
        return self._request("GET", "/api/v1/whoami", wire.Whoami, expect=200)  # type: ignore[return-value]

    def list_projects(self) -> wire.ProjectList:
        return self._request("GET", "/api/v1/admin/projects", wire.ProjectList, expect=200)  # type: ignore[return-value]

    def get_project(self, project_id: str) -> wire.ProjectSummary:
        path = f"/api/v1/admin/projects/{_seg(project_id)}"
        return self._request("GET", path, wire.ProjectSummary, expect=200)  # type: ignore[return-value]

    def get_progress(self, project_id: str) -> wire.Progress | None:
        """Percent done, rate and ETA; None from a server without the route (404
        ``not_found`` for a known project means the route is missing, e.g. the reference)."""
        path = f"/api/v1/admin/projects/{_seg(project_id)}/progress"
        try:
            return self._request("GET", path, wire.Progress, expect=200)  # type: ignore[return-value]
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def put_project(self, project_id: str, body: dict[str, Any]) -> wire.ProjectSummary:
        path = f"/api/v1/admin/projects/{_seg(project_id)}"
        return self._request(  # type: ignore[return-value]
            "PUT", path, wire.ProjectSummary, expect=200, json_body=msgspec.json.encode(body)
        )

    def delete_project(self, project_id: str) -> None:
        self._request("DELETE", f"/api/v1/admin/projects/{_seg(project_id)}", None, expect=204)

    def enqueue_raw(self, project_id: str, items: Sequence[bytes]) -> wire.EnqueueResult:
        """POST pre-encoded job objects (one JSON object each) as ``{"jobs": [...]}``."""
        body = b'{"jobs":[' + b",".join(items) + b"]}"
        path = f"/api/v1/admin/projects/{_seg(project_id)}/jobs"
        return self._request("POST", path, wire.EnqueueResult, expect=200, json_body=body)  # type: ignore[return-value]

    def enqueue(self, project_id: str, jobs: Sequence[JobSpec]) -> wire.EnqueueResult:
        return self.enqueue_raw(project_id, [msgspec.json.encode(job_body(j)) for j in jobs])

    def enqueue_source(
        self, project_id: str, body: BinaryIO | Iterator[bytes], length: int | None
    ) -> wire.SourceResult:
        headers = {"Content-Type": "application/zstd"}
        if length is not None:
            headers["Content-Length"] = str(length)
        path = f"/api/v1/admin/projects/{_seg(project_id)}/source"
        return self._request(  # type: ignore[return-value]
            "POST", path, wire.SourceResult, expect=200, content=body, headers=headers
        )

    def list_jobs(
        self, project_id: str, *, status: str | None = None, after_job_id: int = 0, limit: int = 50
    ) -> wire.JobPage:
        params: dict[str, Any] = {"after_job_id": after_job_id, "limit": limit}
        if status:
            params["status"] = status
        path = f"/api/v1/admin/projects/{_seg(project_id)}/jobs"
        return self._request("GET", path, wire.JobPage, expect=200, params=params)  # type: ignore[return-value]

    def iter_jobs(
        self, project_id: str, *, status: str | None = None, after_job_id: int = 0, limit: int = 200
    ) -> Iterator[wire.AdminJob]:
        """Every matching job, following ``next_after_job_id``."""
        cursor: int | None = after_job_id
        while cursor is not None:
            page = self.list_jobs(project_id, status=status, after_job_id=cursor, limit=limit)
            yield from page.jobs
            cursor = page.next_after_job_id

    def get_job(self, project_id: str, job_id: int) -> wire.AdminJob:
        path = f"/api/v1/admin/projects/{_seg(project_id)}/jobs/{_seg(job_id)}"
        return self._request("GET", path, wire.AdminJob, expect=200)  # type: ignore[return-value]

    def requeue_job(self, project_id: str, job_id: int) -> None:
        path = f"/api/v1/admin/projects/{_seg(project_id)}/jobs/{_seg(job_id)}/requeue"
        self._request("POST", path, None, expect=204)

    def delete_job(self, project_id: str, job_id: int) -> None:
        path = f"/api/v1/admin/projects/{_seg(project_id)}/jobs/{_seg(job_id)}"
        self._request("DELETE", path, None, expect=204)

    def list_users(self) -> wire.UserList:
        return self._request("GET", "/api/v1/admin/users", wire.UserList, expect=200)  # type: ignore[return-value]

    def put_user(self, user_id: str, status: str, roles: Sequence[str]) -> None:
        body = msgspec.json.encode({"status": status, "roles": list(roles)})
        self._request(
            "PUT", f"/api/v1/admin/users/{_seg(user_id)}", None, expect=204, json_body=body
        )

    def delete_user(self, user_id: str) -> None:
        self._request("DELETE", f"/api/v1/admin/users/{_seg(user_id)}", None, expect=204)

    def get_token(self, user_id: str) -> wire.MachineToken:
        path = f"/api/v1/admin/users/{_seg(user_id)}/machine-token"
        return self._request("GET", path, wire.MachineToken, expect=200)  # type: ignore[return-value]

    def rotate_token(self, user_id: str) -> wire.MachineToken:
        path = f"/api/v1/admin/users/{_seg(user_id)}/machine-token"
        return self._request("POST", path, wire.MachineToken, expect=201)  # type: ignore[return-value]

    def revoke_token(self, user_id: str) -> None:
        path = f"/api/v1/admin/users/{_seg(user_id)}/machine-token"
        self._request("DELETE", path, None, expect=204)
