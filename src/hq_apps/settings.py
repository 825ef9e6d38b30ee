"""Settings of the tracker server, passed explicitly to ``create_app`` (never read from env here).

The CLI builds these from flags and ``HQ_*`` variables (spec §4.1); tests build them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Web dashboard + GitHub OAuth configuration (spec §5, D4). All six values are required."""

    public_url: str
    github_client_id: str
    github_client_secret: str = field(repr=False)
    web_session_secret: bytes = field(repr=False)
    oauth_admin_org: str
    oauth_admin_team: str
    github_url: str = "https://github.com"
    github_api_url: str = "https://api.github.com"

    @property
    def oauth_redirect_url(self) -> str:
        """The GitHub OAuth callback registered for this deployment."""
        return self.public_url.rstrip("/") + "/auth/github/callback"

    @property
    def secure_cookies(self) -> bool:
        """Session and OAuth cookies carry ``Secure`` when the public URL is HTTPS (any case)."""
        return self.public_url.lower().startswith("https://")


@dataclass(frozen=True, slots=True)
class Settings:
    listen: str = ":8080"
    database_url: str | None = None
    database_pooler: str = "none"
    """``none`` (direct to PostgreSQL) or ``transaction`` (behind a transaction-mode pooler such
    as PgBouncer: no startup parameters, no named prepared statements)."""
    processes: int = 1
    """Worker processes sharing the listening socket (``tracker serve --processes``)."""
    web: WebSettings | None = None
    pool_min: int = 2
    pool_max: int = 4
    worker_lanes: int = 0
    """Worker statements a process runs at once (≤ ``pool_max``); the requests beyond them
    wait and share statements (``hq_adapters.postgres.joined``). 0: :func:`auto_lanes`."""
    sweep_interval_s: float = 5.0
    """D2 background sweep period; ``0`` disables the sweeper (tests with a manual clock)."""
    sweep_batch: int = 1000
    db_connect_timeout_s: float = 5.0
    """How long opening a pool connection may take before the request fails."""
    db_command_timeout_s: float = 30.0
    """Upper bound on any one statement, so a database that stops answering turns into
    500s within bounded time instead of hung requests (large deletes must fit in it)."""
    openapi: bool = True
    metrics_listen: tuple[str, int] | None = None
    """Where ``/metrics`` is served (a separate listener); None = no metrics (issue 14)."""
    worker_fast_path: bool = True
    """Answer claim/complete/fail/extend-lease at the edge without Litestar's routing
    (``hq_apps.api.fast_path``); off, Litestar's handlers answer them the same way."""
    history_interval_s: float = 30.0
    """Period of the job-count snapshots (progress history); runs only with the sweeper."""


def auto_lanes(processes: int, cpus: int | None) -> int:
    """The default worker lanes of a process: the host's cores shared among its processes,
    at least one (PostgreSQL runs about as many statements at once as it has cores, and the
    tracker usually runs on a host its size or beside it)."""
    return max(1, (cpus or 1) // max(1, processes))
