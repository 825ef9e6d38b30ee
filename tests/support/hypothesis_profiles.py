"""Hypothesis profiles for the model-based tests: "ci" (thorough) and "dev" (quick).

Importing registers both; :func:`active` returns the one selected by the ``CI`` environment
variable without loading it globally, so other property tests keep their own settings.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "stateful_step_count": 30,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}

settings.register_profile("ci", max_examples=200, **_COMMON)
settings.register_profile("dev", max_examples=50, **_COMMON)


def active_name() -> str:
    return "ci" if os.environ.get("CI") else "dev"


def active() -> settings:
    return settings.get_profile(active_name())


def load() -> None:
    """Load the selected profile globally (for a dedicated model-test run)."""
    settings.load_profile(active_name())
