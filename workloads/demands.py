"""Declared task demands: what one task of a job uses, in cores and GB of memory, by stage kind.

A workload file's category may declare them (``demand = [cores, GB]``, or one per stage kind:
``demand = {map = [...], reduce = [...]}``), since a packing policy (Falcon) pairs tasks whose
dominant resources differ and nothing measures a task's share of an executor's memory. A stage is
a **map** stage when Spark lists no parent stage for it (it reads its job's input: WordCount's
maps, a TPC-H query's scans) and a **reduce** stage otherwise (it reads shuffled or broadcast
output: WordCount's reduces, a query's joins and aggregations), the same rule live
(``StageDemand.parents``) and in a simulation of a live run (the event logs' stage infos).

The replay carries a job's demands to Spark as the job property :data:`DEMAND_PROP`, one JSON
object ``{"map": [cores, GB], "reduce": [cores, GB]}``; the live engine reads it into each
stage's task demands against its executors' (cores, GB).
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

Demand = tuple[float, float]   # (cores, GB) of one task
STAGE_KINDS = ("map", "reduce")
DEMAND_PROP = "schedbridge.demand"


@dataclass(frozen=True)
class TaskDemands:
    """The demand of each task of a map stage and of a reduce stage."""

    map: Demand
    reduce: Demand

    @classmethod
    def uniform(cls, demand: Demand) -> TaskDemands:
        return cls(demand, demand)

    def of_stage(self, has_parents: bool) -> Demand:
        """A stage's task demand: ``reduce`` if Spark lists parent stages for it, else ``map``."""
        return self.reduce if has_parents else self.map

    def fits(self, capacity: Demand) -> bool:
        """True if a task of either kind fits an executor of ``capacity`` (cores, GB)."""
        return all(d <= c + 1e-9 for demand in (self.map, self.reduce) for d, c in zip(demand, capacity))

    def to_property(self) -> str:
        """The value of :data:`DEMAND_PROP`."""
        return json.dumps({"map": list(self.map), "reduce": list(self.reduce)}, sort_keys=True)

    @classmethod
    def from_property(cls, text: str) -> TaskDemands:
        """The inverse of :meth:`to_property`; ValueError saying what is wrong."""
        try:
            fields = json.loads(text)
        except ValueError:
            raise ValueError(f"{DEMAND_PROP}: not JSON: {text[:80]!r}") from None
        if not isinstance(fields, dict) or set(fields) != set(STAGE_KINDS):
            raise ValueError(f"{DEMAND_PROP}: expected {{\"map\": [cores, GB], \"reduce\": [cores, GB]}}, "
                             f"got {text[:80]!r}")
        try:
            return cls(*(demand(fields[kind]) for kind in STAGE_KINDS))
        except ValueError as exc:
            raise ValueError(f"{DEMAND_PROP}: {exc}") from None

    @classmethod
    def largest(cls, demands: Sequence[Demand]) -> TaskDemands:
        """One demand for tasks that differ (a trace job's, run as one stage): the most of each
        resource any of them asks for, so that each fits where the stage's tasks are placed."""
        return cls.uniform((max(d[0] for d in demands), max(d[1] for d in demands)))


def demand(value: object) -> Demand:
    """``[cores, GB]`` as a Demand: two finite numbers, cores > 0 and GB >= 0; ValueError otherwise."""
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)
            or value[0] <= 0 or value[1] < 0):
        raise ValueError(f"expected [cores, GB] with cores > 0 and GB >= 0, got {value!r}")
    return (float(value[0]), float(value[1]))
