"""Preemptive SRPT per worker, the Falcon paper's SRPT baseline (our reading): priority is
1 / remaining time, a shorter waiting task preempts the longest-remaining running one it
beats; no DAG awareness."""
from policies.framework.api import PolicyEnv
from policies.common.preemptive import preempt_lowest
from policies.falcon.tiers import LIVE, ObliviousConfig, TieredScheduler, best_fit, oblivious, suspended_room
from policies.framework.registry import PolicyEntry, Preempts


def make(config: ObliviousConfig, env: PolicyEnv) -> TieredScheduler:
    return oblivious("srpt-preempt", config, env, preempt_lowest, best_fit, 1.0, 0.0)


ENTRY = PolicyEntry("srpt-preempt", ObliviousConfig, make,
                    "Preemptive SRPT per worker, dependency-oblivious (Falcon baseline)",
                    preempts=Preempts(suspended_room, live=LIVE))
