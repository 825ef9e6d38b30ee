"""The model-based state machine on the in-memory adapter."""

from __future__ import annotations

from tests.support import hypothesis_profiles
from tests.support.memory_factory import MemoryStoreFactory
from tests.support.state_machine import make_state_machine

MemoryMachine = make_state_machine(MemoryStoreFactory())
MemoryMachine.TestCase.settings = hypothesis_profiles.active()
TestMemoryStateMachine = MemoryMachine.TestCase
