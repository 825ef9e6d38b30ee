"""PostgresStore is one class per port over a shared Database: every Store method is the bound
method of the one object that implements its port, and no port class inherits state from
another (no mixins). Nothing here touches the database."""

from __future__ import annotations

import pytest

from hq_adapters.postgres import PostgresStore
from hq_adapters.postgres.database import Database
from hq_adapters.postgres.store import port_methods
from hq_domain import ports
from hq_domain.clock import ManualClock

# store attribute → the port its object implements
PARTS = {
    "auth": ports.AuthPort,
    "worker": ports.WorkerPort,
    "maintenance": ports.MaintenancePort,
    "monitor": ports.MonitorPort,
    "projects": ports.ProjectsPort,
    "enqueuing": ports.EnqueuePort,
    "users": ports.UsersPort,
    "observe": ports.ObservePort,
    "web": ports.WebPort,
}


class _NoPool:
    """Stands in for the pool, which nothing here uses (the gate in front of it asks its size)."""

    def get_max_size(self) -> int:
        return 1


@pytest.fixture
def store() -> PostgresStore:
    return PostgresStore(_NoPool(), ManualClock())  # type: ignore[arg-type]


def test_port_methods_lists_own_and_inherited_methods() -> None:
    assert port_methods(ports.MaintenancePort) == ["sweep_expired", "prune_claim_buckets"]
    admin = port_methods(ports.AdminPort)
    assert {"list_projects", "enqueue", "bootstrap_user"} <= set(admin)
    assert sorted(admin) == sorted(
        port_methods(ports.ProjectsPort) + port_methods(ports.EnqueuePort)
        + port_methods(ports.UsersPort)
    )


def test_every_store_method_is_bound_from_its_port_object(store: PostgresStore) -> None:
    owner: dict[str, str] = {}
    for attr, port in PARTS.items():
        part = getattr(store, attr)
        for name in port_methods(port):
            assert name not in owner, f"{name} is in two ports"
            owner[name] = attr
            method = getattr(store, name)
            assert method.__self__ is part and method.__func__ is getattr(type(part), name)
    assert set(port_methods(ports.Store)) == set(owner) | {"close"}


def test_one_class_per_port_and_no_mixins(store: PostgresStore) -> None:
    classes = {type(getattr(store, attr)) for attr in PARTS}
    assert len(classes) == len(PARTS)
    for cls in classes:
        assert cls.__mro__ == (cls, object), f"{cls.__name__} inherits {cls.__mro__[1:-1]}"
    assert isinstance(store.database, Database)


def test_store_options_are_explicit() -> None:
    store = PostgresStore(_NoPool(), ManualClock(), claim_sweep_limit=3)  # type: ignore[arg-type]
    assert store.worker.claim_orders == {}
    with pytest.raises(TypeError):
        store.worker.claim_orders["p"] = "fifo"  # type: ignore[index]  # a read-only view
    with pytest.raises(TypeError):
        PostgresStore(None, ManualClock(), min_size=1)  # type: ignore[arg-type,call-arg]
