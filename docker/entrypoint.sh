#!/bin/sh
# Container entrypoint for the SavewebHQ image (spec §7).
#
# `serve` (the default command): check the configuration, apply migrations, then replace this
# shell with `tracker serve` so the server receives signals directly (compose adds an init).
# No arguments means `serve`. Anything else runs verbatim, e.g.
#   docker compose run --rm tracker tracker bootstrap-user ...
#   docker compose run --rm tracker hqctl enqueue ...
set -eu

[ "$#" -gt 0 ] || set -- serve
if [ "$1" != "serve" ]; then
    exec "$@"
fi
shift

fail() {
    echo "docker-entrypoint: $*" >&2
    exit 1
}

[ -n "${HQ_DATABASE_URL:-}" ] || fail "HQ_DATABASE_URL is required"

# Web administration is all-or-nothing: one web variable set means all six are required.
web_vars="HQ_PUBLIC_URL HQ_GITHUB_CLIENT_ID HQ_GITHUB_CLIENT_SECRET_FILE HQ_WEB_SESSION_SECRET_FILE HQ_OAUTH_ADMIN_ORG HQ_OAUTH_ADMIN_TEAM"
set_count=0
missing=""
for name in $web_vars; do
    eval "value=\${$name:-}"
    if [ -n "$value" ]; then
        set_count=$((set_count + 1))
    else
        missing="$missing $name"
    fi
done
if [ "$set_count" -gt 0 ] && [ -n "$missing" ]; then
    fail "web administration needs all of $web_vars; missing:$missing"
fi

tracker migrate --database-url "$HQ_DATABASE_URL"
exec tracker serve --listen :8080 --database-url "$HQ_DATABASE_URL" "$@"
