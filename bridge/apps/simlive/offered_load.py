"""`sim-vs-live --offered-load`: the mix's arrival rate that offers the cluster a given load here.

A fixed ``mean_interarrival_s`` offers a load that follows the host's speed: the interactive/batch
mix kept stock Spark's slots 0.84 busy on one day's testbed and overloaded it (short jobs' median
JCT 25x longer) on a host half as fast. The papers' conditions are a load, not a rate, so the
comparison first measures the mix's work on this cluster and sets the rate from it.

The offered load of ``jobs`` jobs arriving one every ``s`` seconds on ``slots`` slots is
``work / (slots * jobs * s)``, with ``work`` the slot-seconds their tasks held (full-share task
time, `measured.live_tasks`) in a run of stock Spark. Work itself depends on the rate where
executors share a host's cores (the testbed's 4 one-core executors on 2 cores): the mix measured
525 slot-seconds at overload and 382 at the rate that work alone called for, which then offered
0.62, not 0.85. So the fit measures again at each new rate, the next rate from the last two
measurements (the secant of work against the rate), until a run offers the load within
``TOLERANCE``, for at most ``RUNS`` stock runs. The run that offered the load is stock's first
repeat of the comparison, at that rate already.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

FIT_POLICY = "stock"  # whose runs measure the mix's work (the load is stock Spark's)
RUNS = 3          # stock runs a fit may take (our choice: each costs a run of the whole mix)
TOLERANCE = 0.05  # how close to the aim a measured run must come (absolute, in fractions of the slots' time)


@dataclass(frozen=True)
class Measured:
    """One stock run of the fit: its rate and the slot-seconds its tasks held."""

    interarrival_s: float
    work_s: float

    def offered(self, slots: int, jobs: int) -> float:
        """The load this run offered: its work over slots x jobs x its interarrival."""
        return self.work_s / (slots * jobs * self.interarrival_s)


def interarrival_for(work_s: float, slots: int, jobs: int, load: float) -> float:
    """Mean seconds between arrivals that offer ``load`` (a fraction of the slots' time) to
    ``slots`` slots from ``jobs`` jobs needing ``work_s`` slot-seconds in all."""
    if not (work_s > 0 and math.isfinite(work_s)):
        raise ValueError(f"the measured work is {work_s} slot-seconds: no task of the run was measured")
    if slots < 1 or jobs < 1 or not 0 < load <= 1:
        raise ValueError(f"slots {slots}, jobs {jobs}, load {load}: need slots and jobs >= 1 and 0 < load <= 1")
    return work_s / (slots * jobs * load)


def next_interarrival(runs: list[Measured], slots: int, jobs: int, load: float) -> float:
    """The rate to measure next: with one run, the one its work calls for; with more, where the
    line through the last two runs' work crosses the work that offers ``load`` (falling back to
    the last run's own call where that line does not cross it at a positive rate)."""
    last = runs[-1]
    direct = interarrival_for(last.work_s, slots, jobs, load)
    if len(runs) < 2 or runs[-2].interarrival_s == last.interarrival_s:
        return direct
    before = runs[-2]
    slope = (last.work_s - before.work_s) / (last.interarrival_s - before.interarrival_s)
    demand = slots * jobs * load            # the work per second of interarrival that offers `load`
    if demand - slope <= 0:
        return direct
    crossing = (before.work_s - slope * before.interarrival_s) / (demand - slope)
    return crossing if crossing > 0 and math.isfinite(crossing) else direct


def converged(run: Measured, slots: int, jobs: int, load: float) -> bool:
    """Whether ``run`` offered ``load`` within :data:`TOLERANCE`."""
    return abs(run.offered(slots, jobs) - load) <= TOLERANCE
