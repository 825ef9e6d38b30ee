"""``hqctl``: the remote admin client (spec §4.2) plus routine administration commands."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hq_apps.cli.cliutil import run_commands
from hq_apps.cli.hqctl import admin
from hq_apps.cli.hqctl.enqueue import enqueue, enqueue_source

DESCRIPTION = """Remote admin client for a SavewebHQ tracker.

Every command talks to the tracker at --url (env HQ_URL, default https://hq.saveweb.org) with
an admin machine token read from --machine-token-file (env HQ_MACHINE_TOKEN_FILE). Admin
commands print text tables; add --json for the server's JSON."""
GROUPS = {
    "projects": "Create, inspect and delete projects.",
    "jobs": "List, inspect, requeue and delete jobs.",
    "users": "List, create/update and delete users.",
    "tokens": "Show, rotate and revoke users' machine tokens.",
}
_CONN = "[--url URL] [--allow-http] [--machine-token-file FILE] [--timeout DURATION]"
COMMANDS = {
    "enqueue": (enqueue, "usage: hqctl enqueue --project-id ID [--input PATH|-] "
                "[--format values|jsonl] [--batch-size N] [--progress-every N] [--max-jobs N] "
                f"[--type seed|asset] {_CONN}"),
    "enqueue-source": (enqueue_source, f"usage: hqctl enqueue-source --project-id ID --input PATH|- {_CONN}"),
    "whoami": (admin.whoami, f"usage: hqctl whoami [--json] {_CONN}"),
    "projects list": (admin.projects_list, f"usage: hqctl projects list [--json] {_CONN}"),
    "projects get": (admin.projects_get, f"usage: hqctl projects get --project-id ID [--json] {_CONN}"),
    "projects put": (admin.projects_put, "usage: hqctl projects put --project-id ID "
                     "[--status S] [--identity-mode M] [--claim-order O] [--dispatch-qps X] "
                     "[--worker-claim-qps X] [--max-jobs-per-claim N] [--max-resets N] "
                     f"[--recommended-lease-seconds N] [--client-versions a,b] [--json] {_CONN}"),
    "projects delete": (admin.projects_delete, f"usage: hqctl projects delete --project-id ID [--yes] [--json] {_CONN}"),
    "jobs list": (admin.jobs_list, "usage: hqctl jobs list --project-id ID [--status S] "
                  f"[--after-job-id N] [--limit N] [--all] [--json] {_CONN}"),
    "jobs get": (admin.jobs_get, f"usage: hqctl jobs get --project-id ID --job-id N [--json] {_CONN}"),
    "jobs requeue": (admin.jobs_requeue, f"usage: hqctl jobs requeue --project-id ID --job-id N [--json] {_CONN}"),
    "jobs delete": (admin.jobs_delete, f"usage: hqctl jobs delete --project-id ID --job-id N [--json] {_CONN}"),
    "users list": (admin.users_list, f"usage: hqctl users list [--json] {_CONN}"),
    "users put": (admin.users_put, "usage: hqctl users put --user-id ID --status S "
                  f"[--roles admin,worker] [--json] {_CONN}"),
    "users delete": (admin.users_delete, f"usage: hqctl users delete --user-id ID [--json] {_CONN}"),
    "tokens get": (admin.tokens_get, f"usage: hqctl tokens get --user-id ID [--json] {_CONN}"),
    "tokens rotate": (admin.tokens_rotate, f"usage: hqctl tokens rotate --user-id ID [--json] {_CONN}"),
    "tokens revoke": (admin.tokens_revoke, f"usage: hqctl tokens revoke --user-id ID [--json] {_CONN}"),
}  # fmt: skip
USAGE = "usage: hqctl {enqueue|enqueue-source} [flags]"
MORE_USAGE = "       hqctl {whoami|projects|jobs|users|tokens} ... [flags]"


def run(argv: Sequence[str]) -> int:
    return run_commands(
        "hqctl", COMMANDS, argv, usage=f"{USAGE}\n{MORE_USAGE}", description=DESCRIPTION,
        groups=GROUPS,
    )  # fmt: skip


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
