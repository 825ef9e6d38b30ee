"""The local fake GitHub for tests; the runtime lives in :mod:`hq_apps.web.fake_github` so
``tracker dev --fake-github`` can start it too."""

from hq_apps.web.fake_github import (
    FakeGitHub,
    FakeUser,
    dev_web,
    reserve_loopback,
    serve,
    serve_asgi_in_thread,
)

__all__ = ["FakeGitHub", "FakeUser", "dev_web", "reserve_loopback", "serve", "serve_asgi_in_thread"]
