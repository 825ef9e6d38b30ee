"""Fleet simulation: many workers against the in-memory Store, in virtual time."""

from hq_apps.sim.config import Duration, SimConfig
from hq_apps.sim.engine import Simulation
from hq_apps.sim.report import SimReport

__all__ = ["Duration", "SimConfig", "SimReport", "Simulation"]
