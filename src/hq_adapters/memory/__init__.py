"""The in-memory Store adapter: plain Python over the domain rules (tests, dev, simulation)."""

from hq_adapters.memory.store import MemoryStore

__all__ = ["MemoryStore"]
