"""``spark-fifo``: stages in Spark's own order, each filling free slots, local hosts first.

It needs no policy engine, so it proves the plugin's round trip on its own and is the baseline
the live policies (``bridge.drivers.spark.engine``) are compared with.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from bridge.drivers.spark.state import AppState, LiveCluster
from bridge.protocol.messages import Grant, LiveEvent, OfferRound, Placement, Slot, StageDemand


def fill(stage: StageDemand, free: dict[str, int], slots: Sequence[Slot], want: int) -> list[Grant]:
    """Grants up to ``want`` of ``free`` slots to ``stage``, executors on preferred hosts first.

    ``free`` (executor -> free slots) is decremented in place."""
    order = sorted(slots, key=lambda s: -stage.locality.get(s.host, 0))
    grants = []
    for s in order:
        n = min(want, free.get(s.executor, 0))
        if n > 0:
            grants.append(Grant(stage.stage, stage.attempt, s.executor, n))
            free[s.executor] -= n
            want -= n
        if want == 0:
            break
    return grants


def free_slots(slots: Sequence[Slot]) -> dict[str, int]:
    return {s.executor: s.free for s in slots}


class FifoPlanner:
    """First come, first served, in the stage order Spark itself uses (job id, then stage id).

    That is Spark's own ``resourceOffers`` order (the round's stages come in the root pool's
    order; each stage takes free slots, preferred hosts first, as Spark's task sets take them
    locality first), so every answer declares ``spark_order``: the plugin need not ask again
    while the stages and executors stay the same."""

    name = "spark-fifo"
    launch_reports = False

    def __init__(self, params: Mapping[str, str] | None = None) -> None:
        self.settings = self.settings_for(params or {})

    def settings_for(self, params: Mapping[str, str]) -> tuple[()]:
        if params:
            raise ValueError(f"{self.name} takes no parameters, got {sorted(params)}")
        return ()

    def rebuild(self, state: AppState) -> None:
        """FIFO keeps no state of its own."""

    def forget(self, app: str) -> None:
        """FIFO keeps no state of its own."""

    def estimates_used(self) -> list[dict[str, object]]:
        """Spark's FIFO order uses no estimates."""
        return []

    def demand_faults(self) -> Mapping[str, int]:
        """Spark's FIFO order reads no demands."""
        return {}

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        free = free_slots(rnd.slots)
        grants: list[Grant] = []
        for stage in rnd.stages:
            grants += fill(stage, free, rnd.slots, stage.pending)
        return Placement(tuple(grants), spark_order=True)
