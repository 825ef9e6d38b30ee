"""Hooks the request path calls with what happened (issue 14): a no-op unless metrics are on.

The API never imports prometheus_client; ``hq_apps.metrics`` installs a recording observer
when ``--metrics-listen`` is given. Each hook is a few attribute lookups when off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hq_domain.worker import ItemResult


class Observer(Protocol):
    def request(self, method: str, route: str, status: int, seconds: float) -> None: ...

    def claim(self, project_id: str, jobs: int) -> None: ...

    def items(self, project_id: str, op: str, results: Sequence[ItemResult]) -> None: ...

    def swept(self, n: int) -> None: ...


class NullObserver:
    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        return None

    def claim(self, project_id: str, jobs: int) -> None:
        return None

    def items(self, project_id: str, op: str, results: Sequence[ItemResult]) -> None:
        return None

    def swept(self, n: int) -> None:
        return None


current: Observer = NullObserver()


def install(observer: Observer) -> None:
    global current
    current = observer


def reset() -> None:
    install(NullObserver())


def route_of(scope: Any) -> str:
    """The matched route template (bounded label values), never the raw path."""
    template = scope.get("path_template")
    return template if isinstance(template, str) else "unmatched"
