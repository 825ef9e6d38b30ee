"""Worker configuration and tracker URL rules (spec §6.3)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from hq_adapters.client.errors import TransportError


@dataclass(frozen=True, slots=True)
class Config:
    tracker_url: str
    machine_token: str
    client_version: str
    allow_http_tracker: bool = False
    request_timeout: float = 45.0

    def validate(self) -> None:
        if not self.tracker_url or not self.machine_token or not self.client_version:
            raise ValueError("tracker URL, machine token, and client version are required")
        if not 1.0 <= self.request_timeout <= 600.0:
            raise ValueError("request_timeout must be between 1 and 600 seconds")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The origin (``scheme://host[:port]``) and the base path prefixed to every route."""

    origin: str
    base_path: str

    def url(self, path: str) -> str:
        return f"{self.origin}{self.base_path}{path}"


def parse_tracker_url(url: str, allow_http: bool) -> Endpoint:
    """Accept ``https`` (or ``http`` when allowed) with a host, no query or fragment.

    A base path is allowed and prefixed (the reference SDK does the same); userinfo is ignored.
    """
    parsed = urlsplit(url)
    if (
        not parsed.hostname
        or parsed.query
        or parsed.fragment
        or parsed.scheme not in {"http", "https"}
        or (parsed.scheme == "http" and not allow_http)
    ):
        raise TransportError("invalid or disallowed HQ URL")
    try:
        port = parsed.port
    except ValueError as error:
        raise TransportError("invalid HQ URL port") from error
    host = parsed.hostname
    if ":" in host:
        host = f"[{host}]"
    origin = f"{parsed.scheme}://{host}" + (f":{port}" if port is not None else "")
    return Endpoint(origin, parsed.path.rstrip("/"))
