"""One handler style in the tracker app: every route (API and dashboard) closes over what it
needs, built by a factory in ``create_app``; none asks Litestar for a dependency per request."""

from __future__ import annotations

from hq_adapters.memory import MemoryStore
from hq_apps.api.app import create_app
from hq_apps.settings import Settings, WebSettings
from hq_apps.web.fake_github import FakeGitHub
from hq_domain.clock import ManualClock


def test_no_route_resolves_dependencies() -> None:
    web = WebSettings("https://hq.example", "cid", "c-secret", b"s" * 32, "org", "team")
    store = MemoryStore(ManualClock())
    apps = {
        "tracker": create_app(Settings(sweep_interval_s=0, web=web), store, ManualClock()),
        "fake GitHub": FakeGitHub("cid", "c-secret").app(),
    }
    for name, app in apps.items():
        handlers = [h for route in app.routes for h in getattr(route, "route_handlers", ())]
        assert len(handlers) > 5, name
        with_deps = sorted(
            f"{name}: {route}" for h in handlers if h.resolve_dependencies()
            for route in h.paths
        )
        assert with_deps == []
