"""The tracker app as an import string (``benchmarks.asgi_app:app``) for any ASGI server.

``hq_apps.wiring.serve`` opens the store before it builds the app; an ASGI server given an
import string only imports a module, so this wrapper does the same work inside the ASGI
lifespan: on ``lifespan.startup`` it opens the PostgreSQL store (``HQ_DATABASE_URL``, the same
pool sizes as ``tracker serve``) and builds ``create_app``, then hands the lifespan on to the
Litestar app (which starts its sweeper); the store is closed after the app's shutdown.
Benchmark-only: production keeps the explicit wiring.
"""

from __future__ import annotations

import os
from typing import Any

from hq_apps.settings import Settings
from hq_apps.wiring import open_store
from hq_domain.clock import SystemClock

Scope = dict[str, Any]


class LifespanApp:
    def __init__(self) -> None:
        self._app: Any = None
        self._store: Any = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif self._app is None:
            raise RuntimeError("request before lifespan startup (enable the ASGI lifespan)")
        else:
            await self._app(scope, receive, send)

    async def _lifespan(self, scope: Scope, receive: Any, send: Any) -> None:
        startup = await receive()
        try:
            from hq_apps.api.app import create_app

            settings = Settings(database_url=os.environ["HQ_DATABASE_URL"])
            clock = SystemClock()
            self._store = await open_store(settings, clock)
            self._app = create_app(settings, self._store, clock)
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            return
        replayed = False

        async def inner_receive() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return startup
            return await receive()

        async def inner_send(message: dict[str, Any]) -> None:
            if message["type"].startswith("lifespan.shutdown."):
                await self._store.close()
            await send(message)

        await self._app(scope, inner_receive, inner_send)


app = LifespanApp()
