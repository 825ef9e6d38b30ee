"""The model-based state machine (tests/support/state_machine.py) on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.support import hypothesis_profiles
from tests.support.state_machine import make_state_machine


@pytest.mark.postgres
def test_postgres_state_machine(postgres_factory) -> None:
    """Built inside the test because the factory (and its database) is a session fixture."""
    machine = make_state_machine(postgres_factory)
    machine.TestCase.settings = hypothesis_profiles.active()
    machine.TestCase("runTest").runTest()
