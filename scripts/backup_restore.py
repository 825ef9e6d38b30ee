#!/usr/bin/env python3
"""Back up a live HQ database and prove the backup restores into a working tracker.

    scripts/backup_restore.py [options] SOURCE_URL TARGET_DB

1. ``pg_dump --format=custom`` of SOURCE_URL (a consistent snapshot; HQ keeps running);
2. ``CREATE DATABASE TARGET_DB`` on the same server (or on ``--target-server``) and
   ``pg_restore`` into it in one transaction; TARGET_DB must not exist yet;
3. ``tracker migrate`` on the restored database (a backup from an older release is upgraded);
4. ``tracker serve`` against it on a loopback port: ``GET /healthz`` must answer 200 and, with
   ``--token-file`` (an administrator machine token that exists in the backup),
   ``GET /api/v1/admin/projects`` must list exactly the restored projects with their job totals.

It prints a JSON summary on stdout and exits 0, or prints the failing step and exits 1.
``--drop`` removes TARGET_DB afterwards (a restore drill); without it the restored database
stays for inspection or for switching HQ over to it. Standard library only: runs with any
Python >= 3.11 next to the PostgreSQL client tools (same major version as the server, or newer)
and the ``tracker`` command. See docs/operations.md, "Backup and restore".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

WEB_VARIABLES = (
    "HQ_PUBLIC_URL",
    "HQ_GITHUB_CLIENT_ID",
    "HQ_GITHUB_CLIENT_SECRET_FILE",
    "HQ_WEB_SESSION_SECRET_FILE",
    "HQ_OAUTH_ADMIN_ORG",
    "HQ_OAUTH_ADMIN_TEAM",
)
DATABASE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
JOB_TOTALS_SQL = (
    "SELECT p.id, count(j.job_id) FROM tracker_projects p"
    " LEFT JOIN tracker_jobs j ON j.project_id = p.id GROUP BY p.id ORDER BY p.id"
)


class StepFailed(Exception):
    pass


def log(message: str) -> None:
    print(f"backup_restore: {message}", file=sys.stderr, flush=True)


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(":" + parts.password + "@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class Tools:
    def __init__(self, pg_bin: str | None, tracker: str) -> None:
        self.pg_bin = pg_bin
        self.tracker = shlex.split(tracker)

    def pg(self, name: str) -> str:
        return str(Path(self.pg_bin) / name) if self.pg_bin else name

    def run(self, step: str, argv: list[str], env: dict[str, str] | None = None) -> str:
        log(step)
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise StepFailed(f"{step}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
        return proc.stdout

    def psql(self, step: str, url: str, sql: str) -> str:
        argv = [
            self.pg("psql"),
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ]
        return self.run(step, argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, token: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def read_token(path: Path) -> str:
    if path.stat().st_mode & 0o077:
        raise StepFailed(f"{path}: secret file permissions must not allow group or other access")
    token = path.read_text().strip()
    if not token:
        raise StepFailed(f"{path}: empty token file")
    return token


def check_served(tools: Tools, target_url: str, token: str | None, timeout: float) -> dict:
    """Start ``tracker serve`` on the restored database and query it; always stops it."""
    port = free_port()
    env = {**os.environ, "HQ_DATABASE_URL": target_url}
    for name in WEB_VARIABLES:  # the check needs the API only, never GitHub
        env.pop(name, None)
    base = f"http://127.0.0.1:{port}"
    argv = [*tools.tracker, "serve", "--listen", f"127.0.0.1:{port}", "--database-url", target_url]
    log(f"starting tracker serve on {base}")
    with tempfile.TemporaryFile(mode="w+") as output:
        server = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if server.poll() is not None:
                    output.seek(0)
                    raise StepFailed(
                        f"tracker serve exited {server.returncode}: {output.read()[-2000:]}"
                    )
                try:
                    status, _ = http_get(base + "/healthz", timeout=2)
                    if status == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise StepFailed(f"/healthz did not answer 200 within {timeout:g} s")
                time.sleep(0.2)
            result: dict = {"healthz": "ok", "admin_projects": None}
            if token is not None:
                status, body = http_get(base + "/api/v1/admin/projects", token)
                if status != 200:
                    raise StepFailed(f"GET /api/v1/admin/projects: HTTP {status}: {body[:300]!r}")
                projects = json.loads(body)["projects"]
                result["admin_projects"] = {
                    p["id"]: sum(p["job_counts"].values()) for p in projects
                }
            return result
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def parse_totals(text: str) -> dict[str, int]:
    totals = {}
    for line in text.splitlines():
        if line.strip():
            project, _, count = line.rpartition("|")
            totals[project] = int(count)
    return totals


def backup_restore(args: argparse.Namespace) -> dict:
    if not DATABASE_NAME.match(args.target_db):
        raise StepFailed("TARGET_DB must be a lower-case identifier ([a-z_][a-z0-9_]*, ≤ 63 chars)")
    token = read_token(args.token_file) if args.token_file else None
    tools = Tools(args.pg_bin, args.tracker)
    server_url = args.target_server or args.source_url
    target_url = with_database(server_url, args.target_db)
    if (
        urlsplit(args.source_url).path.lstrip("/") == args.target_db
        and server_url == args.source_url
    ):
        raise StepFailed("TARGET_DB must differ from the source database")

    with tempfile.TemporaryDirectory(prefix="hq-backup-") as scratch:
        dump = args.dump_file or Path(scratch) / "hq.dump"
        private_file(dump)
        tools.run(
            f"pg_dump {redact(args.source_url)} -> {dump}",
            [tools.pg("pg_dump"), "--format=custom", "--no-password", f"--file={dump}",
             f"--dbname={args.source_url}"],
        )  # fmt: skip
        tools.psql(
            f"create database {args.target_db}", server_url, f'CREATE DATABASE "{args.target_db}"'
        )
        created = True
        try:
            tools.run(
                f"pg_restore into {args.target_db}",
                [tools.pg("pg_restore"), "--exit-on-error", "--single-transaction", "--no-owner",
                 "--no-privileges", "--no-password", f"--dbname={target_url}", str(dump)],
            )  # fmt: skip
            tools.run(f"tracker migrate on {args.target_db}",
                      [*tools.tracker, "migrate", "--database-url", target_url])  # fmt: skip
            totals = parse_totals(tools.psql("count restored jobs", target_url, JOB_TOTALS_SQL))
            served = check_served(tools, target_url, token, args.timeout)
            if served["admin_projects"] is not None and served["admin_projects"] != totals:
                raise StepFailed(
                    f"the API lists {served['admin_projects']} but the restored tables hold {totals}"
                )
            summary = {
                "target_database": args.target_db,
                "dump_bytes": Path(dump).stat().st_size,
                "dump_file": str(args.dump_file) if args.dump_file else None,
                "projects": len(totals),
                "jobs": sum(totals.values()),
                **served,
                "dropped": False,
            }
        except BaseException:
            if args.drop and created:
                drop(tools, server_url, args.target_db)
            raise
        if args.drop:
            drop(tools, server_url, args.target_db)
            summary["dropped"] = True
        return summary


def drop(tools: Tools, server_url: str, database: str) -> None:
    tools.psql(
        f"drop database {database}",
        server_url,
        f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)',
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="backup_restore.py",
        description="pg_dump a live HQ database, restore it into a new database, migrate it, "
        "and check a tracker served from it.",
    )
    p.add_argument(
        "source_url", metavar="SOURCE_URL", help="PostgreSQL URL of the live HQ database"
    )
    p.add_argument(
        "target_db", metavar="TARGET_DB", help="name of the new database to restore into"
    )
    p.add_argument(
        "--target-server",
        metavar="URL",
        help="URL of any database on the server that gets TARGET_DB (default: SOURCE_URL's server)",
    )
    p.add_argument(
        "--dump-file", type=Path, metavar="PATH", help="keep the custom-format dump here"
    )
    p.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="administrator machine token (mode 0600) for GET /api/v1/admin/projects",
    )
    p.add_argument(
        "--tracker",
        default=os.environ.get("HQ_TRACKER", "tracker"),
        metavar="CMD",
        help='the tracker command, e.g. "uv run tracker" (default: $HQ_TRACKER or tracker)',
    )
    p.add_argument("--pg-bin", metavar="DIR", help="directory holding pg_dump, pg_restore and psql")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for /healthz")
    p.add_argument("--drop", action="store_true", help="drop TARGET_DB after the check (a drill)")
    return p  # fmt: skip


def private_file(path: Path) -> None:
    """Create (or truncate) ``path`` as 0600 before pg_dump writes into it: a dump holds token
    digests and job data, and pg_dump would otherwise create it with the caller's umask
    (usually world-readable). pg_dump keeps the mode of the file it overwrites. A symlink is
    refused rather than followed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        summary = backup_restore(args)
    except (StepFailed, OSError) as err:
        log(f"FAILED: {err}")
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
