"""`sim-vs-live --offered-load`: the mix's arrival rate that offers the cluster a given load here.

A fixed ``mean_interarrival_s`` offers a load that follows the host's speed: the interactive/batch
mix kept stock Spark's slots 0.84 busy on one day's testbed and overloaded it (short jobs' median
JCT 25x longer) on a host half as fast. The papers' conditions are a load, not a rate, so the
comparison can first measure the mix's work on this cluster and set the rate from it.

The offered load of ``jobs`` jobs arriving one every ``s`` seconds on ``slots`` slots is
``work / (slots * jobs * s)``, with ``work`` the slot-seconds their tasks held (full-share task
time, `measured.live_tasks`) in a run of stock Spark at the file's rate. Task work grows a little
with contention (executors sharing a host's cores), so a run measured under overload sets a rate
whose load comes out somewhat below the aim; sim-vs-live prints each run's utilization beside it.
"""
from __future__ import annotations

import math


def interarrival_for(work_s: float, slots: int, jobs: int, load: float) -> float:
    """Mean seconds between arrivals that offer ``load`` (a fraction of the slots' time) to
    ``slots`` slots from ``jobs`` jobs needing ``work_s`` slot-seconds in all."""
    if not (work_s > 0 and math.isfinite(work_s)):
        raise ValueError(f"the measured work is {work_s} slot-seconds: no task of the run was measured")
    if slots < 1 or jobs < 1 or not 0 < load <= 1:
        raise ValueError(f"slots {slots}, jobs {jobs}, load {load}: need slots and jobs >= 1 and 0 < load <= 1")
    return work_s / (slots * jobs * load)


def offered(work_s: float, slots: int, jobs: int, interarrival_s: float) -> float:
    """The load ``jobs`` jobs of ``work_s`` slot-seconds offer ``slots`` slots at one every
    ``interarrival_s`` seconds (the inverse of :func:`interarrival_for`)."""
    return work_s / (slots * jobs * interarrival_s)
