"""Stand-in schedulers: Spark's own schedulers, run live without the plugin, which the simulator
plays as a registered policy.

A comparison names them beside the policies (``replay --policy stock-fair``, ``sim-vs-live
--policy stock``), so every command has to know which names run without the plugin, which
Spark settings they need live and which policy models them in the simulator. Callers ask
:func:`policies.framework.registry.stand_in` rather than compare names: a new stand-in is one entry here.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SCHEDULER_MODE = "spark.scheduler.mode"


@dataclass(frozen=True)
class StandIn:
    """One stand-in: its name, what it is, the registered policy the simulator runs for it
    (``sim_model``), the Spark settings it needs live (``live_conf``) and whether each replayed
    job runs in its own scheduler pool (``job_pools``)."""

    name: str
    summary: str
    sim_model: str
    live_conf: Mapping[str, str] = field(default_factory=dict)
    job_pools: bool = False

    def conf(self, user: Mapping[str, str]) -> dict[str, str]:
        """``live_conf``, checked against the user's Spark conf: a user's setting is never
        overridden, so one that differs is refused (Spark reads these values case-insensitively)."""
        for key, value in self.live_conf.items():
            given = user.get(key)
            if given is not None and given.upper() != value.upper():
                raise ValueError(f"{self.name} runs Spark with {key}={value}, but the conf sets {key}={given}")
        return dict(self.live_conf)

    def pool(self, job_id: int) -> str | None:
        """The scheduler pool of replayed job ``job_id`` (None: Spark's default pool). The ids are
        zero-padded so that pool names sort as the ids do: Spark breaks a tie between pools by name."""
        return f"schedbridge-pool-{job_id:06d}" if self.job_pools else None


STOCK = StandIn("stock", "Spark's own FIFO scheduler, no plugin", "fifo", {SCHEDULER_MODE: "FIFO"})
STOCK_FAIR = StandIn("stock-fair", "Spark's FAIR scheduler, no plugin; each replayed job its own pool", "fair",
                     {SCHEDULER_MODE: "FAIR"}, job_pools=True)
STAND_INS: dict[str, StandIn] = {s.name: s for s in (STOCK, STOCK_FAIR)}
