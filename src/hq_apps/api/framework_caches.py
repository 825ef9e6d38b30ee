"""Litestar's parser caches, resized so a stranger cannot fill them (issue 13 #2).

Litestar memoises several parsers with ``lru_cache(1024)`` keyed by what the client sent: the
query string, the Cookie header, the URL, the routed path and its path parameters, and (for
url-encoded bodies) the whole body. With a 64 KiB header block, 1,024 entries of a query like
``a&a&…`` hold about 2 MiB of parsed tuples each: gigabytes a client could pin for the process's
lifetime. :func:`install` swaps each cache for one that only remembers small keys (≤ 256
characters, 256 entries; large inputs are parsed every time), which keeps the hot path's hits
(short paths, short queries, a session cookie) and bounds the total to a few MiB.

Patched by name in every module that imported the function; :func:`bound_router` handles the
per-app routing cache. ``tests/security/test_framework_caches.py`` fails if an upgrade renames any.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

MAX_KEY_CHARS = 256
MAX_ENTRIES = 256


def _size(value: Any) -> int:
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, tuple):
        return sum(_size(v) for v in value) + len(value)
    return 1


def small_key_cache(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` memoised for calls whose arguments are small; large ones are computed afresh."""
    raw = getattr(fn, "__wrapped__", fn)
    cached = functools.lru_cache(MAX_ENTRIES)(raw)

    @functools.wraps(raw)
    def call(*args: Any, **kwargs: Any) -> Any:
        if sum(_size(a) for a in args) + sum(_size(v) for v in kwargs.values()) <= MAX_KEY_CHARS:
            return cached(*args, **kwargs)
        return raw(*args, **kwargs)

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return call


_FUNCTIONS = {
    "parse_query_string": ("litestar._parsers", "litestar.connection.base",
                           "litestar.datastructures.url", "litestar._kwargs.extractors"),
    "parse_cookie_string": ("litestar._parsers", "litestar.connection.base",
                            "litestar.data_extractors"),
    "parse_url_encoded_form_data": ("litestar._parsers", "litestar.connection.request",
                                    "litestar._kwargs.extractors"),
    "create_query_default_dict": ("litestar._kwargs.extractors",),
    "parse_path_params": ("litestar._asgi.routing_trie.traversal",),
}  # fmt: skip
_installed = False


def install() -> None:
    """Swap the module-level caches (idempotent, process-wide)."""
    global _installed
    if _installed:
        return
    import importlib

    from litestar.datastructures.url import URL

    for name, modules in _FUNCTIONS.items():
        first = importlib.import_module(modules[0])
        bounded = small_key_cache(getattr(first, name))
        for module_name in modules:
            module = importlib.import_module(module_name)
            if not hasattr(module, name):
                raise RuntimeError(f"litestar changed: {module_name}.{name} is gone")
            setattr(module, name, bounded)
    for name in ("_new", "from_components"):
        method = URL.__dict__[name].__func__
        setattr(URL, name, classmethod(small_key_cache(method)))
    _installed = True


def bound_router(app: Any) -> None:
    """Replace the app's per-instance routing cache (keyed by path and method)."""
    router = app.asgi_router
    router.handle_routing = small_key_cache(router._handle_routing)
